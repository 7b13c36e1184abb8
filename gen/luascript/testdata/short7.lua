local v = redis.call('GET', KEYS[1])
if v ~= ARGV[1] then
  return redis.call('SET', KEYS[1], ARGV[1], 'PX', 60000) and 0
end
redis.call('PEXPIRE', KEYS[1], 60000)
local n = redis.call('INCR', KEYS[2])
return redis.call('PEXPIRE', KEYS[2], 60000) and n
