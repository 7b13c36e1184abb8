-- lock_release: compare-and-delete (seed 000 §6, §8).
--
-- KEYS[1] lock          owner token
-- ARGV[1] owner
-- Reply: released (1, or 0 when the lock is not this owner's)
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
return redis.call('DEL', KEYS[1])
