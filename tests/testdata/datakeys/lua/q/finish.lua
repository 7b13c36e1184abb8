-- A finished job tells its parent, whose whole key it keeps in its hash.
local parent = redis.call('HGET', KEYS[1], 'parent')
redis.call('HSET', KEYS[1], 'state', 'done')
if parent then
  redis.call('SREM', parent .. ':deps', ARGV[1])
end
return 1
