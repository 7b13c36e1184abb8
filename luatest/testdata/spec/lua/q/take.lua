local id = redis.call('RPOP', KEYS[1])
if not id then return false end
local job = ARGV[1] .. id
redis.call('HSET', job, 'state', 'active')
local ttl = 3600000
if id == '21' then ttl = ttl * 2 end
if id ~= '13' then
  redis.call('PEXPIRE', job, ttl)
end
redis.call('XADD', KEYS[2], '*', 'taken', id)
redis.call('PUBLISH', 'ev:job:' .. id, 'taken')
return id
