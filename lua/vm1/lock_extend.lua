-- lock_extend: compare-and-expire (seed 000 §6, §8).
--
-- KEYS[1] lock          owner token
-- ARGV[1] owner
-- ARGV[2] lock_ttl      ms
-- Reply: 'ok' (the lease now runs lock_ttl from now), 'expired' (there is no lock:
-- the lease ran out) or 'other_owner' (someone else holds the lock; it is left alone)
local holder = redis.call('GET', KEYS[1])
if not holder then
  return 'expired'
end
if holder ~= ARGV[1] then
  return 'other_owner'
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 'ok'
