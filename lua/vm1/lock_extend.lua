-- lock_extend: compare-and-expire (seed 000 §6, §8).
--
-- KEYS[1] lock          owner token
-- ARGV[1] owner
-- ARGV[2] lock_ttl      ms
-- Reply: extended (1, or 0 when the lock is not this owner's)
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
return redis.call('PEXPIRE', KEYS[1], ARGV[2])
