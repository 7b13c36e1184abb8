local by = tonumber(ARGV[1])
local n = tonumber(redis.call('GET', KEYS[1]) or '0')
if n + by < 0 then
  return redis.error_reply('NEGATIVE the count would go below zero')
end
n = redis.call('INCRBY', KEYS[1], by)
if n == by then
  redis.call('PEXPIRE', KEYS[1], 3600000)
end
return n
