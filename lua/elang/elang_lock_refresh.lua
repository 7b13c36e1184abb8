-- elang_lock_refresh: compare-and-expire (Elang Redis doc, seed 003: refresh
-- before the lease expires).
--
-- KEYS[1] lock          owner token
-- ARGV[1] owner
-- ARGV[2] lease         ms
-- Reply: 'ok' (the lease now runs lease from now), 'expired' (there is no lock:
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
