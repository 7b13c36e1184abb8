local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], 60000)
  return redis.call('INCR', KEYS[2])
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', 60000)
return 0
