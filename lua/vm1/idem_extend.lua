-- idem_extend: the lock owner's heartbeat, compare-and-expire (seed 000 §4).
--
-- KEYS[1] lock          owner token
-- ARGV[1] owner
-- ARGV[2] lock_ttl      ms
-- Reply: extended (1, or 0 for a caller that is not the owner)
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
return redis.call('PEXPIRE', KEYS[1], ARGV[2])
