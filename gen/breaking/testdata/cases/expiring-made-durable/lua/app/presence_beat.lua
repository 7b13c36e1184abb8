if redis.call('EXISTS', KEYS[2]) == 0 then
  return 0
end
redis.call('RPUSH', KEYS[1], ARGV[1])
redis.call('LTRIM', KEYS[1], -10, -1)
return 1
