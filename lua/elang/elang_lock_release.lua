-- elang_lock_release: compare-and-delete of a named lock or a session's lock
-- (Elang Redis doc, seed 003: release only by the owner).
--
-- KEYS[1] lock          owner token
-- ARGV[1] owner
-- Reply: 'ok' (released), 'expired' (there is no lock: the lease ran out) or
-- 'other_owner' (someone else holds the lock; it is left alone)
local holder = redis.call('GET', KEYS[1])
if not holder then
  return 'expired'
end
if holder ~= ARGV[1] then
  return 'other_owner'
end
redis.call('DEL', KEYS[1])
return 'ok'
