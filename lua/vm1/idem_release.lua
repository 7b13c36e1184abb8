-- idem_release: drops the lock, and the record while it is in progress, only for
-- the lock's owner (seed 000 §4): a retry then runs the call again.
--
-- KEYS[1] record        HASH
-- KEYS[2] lock          owner token
-- ARGV[1] owner
-- Reply: released (1, or 0 for a caller that is not the owner)
if redis.call('GET', KEYS[2]) ~= ARGV[1] then
  return 0
end
redis.call('DEL', KEYS[2])
if redis.call('HGET', KEYS[1], 'state') == 'in_progress' then
  redis.call('DEL', KEYS[1])
end
return 1
