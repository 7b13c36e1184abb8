-- lock_acquire: SET NX with the owner's token, expiring after the lease.
--
-- KEYS[1] lock   STRING the holder's token
-- ARGV[1] owner  a random token
-- ARGV[2] lease  ms
-- Reply: 1 when the lock is the owner's now, else 0
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return 1
end
return 0
