-- Extends a lock held by its owner.
-- KEYS[1] the lock
-- ARGV[1] owner token
-- ARGV[2] lease in milliseconds
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
