-- Releases a lock if ARGV[1] owns it.
-- KEYS[1]: the lock; ARGV[1]: the owner token
local owner = redis.call('GET', KEYS[1])
if not owner then
  return 0
end
if owner ~= ARGV[1] then
  return redis.error_reply('NOT_OWNER lock held by another owner')
end
return redis.call('DEL', KEYS[1])
