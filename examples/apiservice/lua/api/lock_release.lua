-- lock_release: deletes the lock only when it still holds the owner's token,
-- so a holder whose lease ran out cannot free the lock of the next one.
--
-- KEYS[1] lock   STRING the holder's token
-- ARGV[1] owner  the token the lock was taken with
-- Reply: 1 when released, 0 when the lock was not the owner's
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call('DEL', KEYS[1])
return 1
