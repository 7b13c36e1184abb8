if redis.call('HGET', KEYS[2], 'paused') == '1' then
  return -1
end
local depth = redis.call('RPUSH', KEYS[1], ARGV[1])
redis.call('LTRIM', KEYS[1], -1000, -1)
return math.min(depth, 1000)
