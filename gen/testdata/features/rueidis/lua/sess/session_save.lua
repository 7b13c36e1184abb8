if redis.call('GET', KEYS[2]) ~= ARGV[1] then
  return redis.error_reply('NOT_OWNER the session lock is not yours')
end
local v = redis.call('HINCRBY', KEYS[1], 'version', 1)
redis.call('HSET', KEYS[1], 'body', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return v
