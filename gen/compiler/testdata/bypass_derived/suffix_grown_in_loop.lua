-- A name grown from the anchor in a loop.
local k = KEYS[1] .. ':lock'
for i = 1, 3 do k = k .. ':lock' end
redis.call('HSET', KEYS[1], 'note', ARGV[2])
redis.call('PUBLISH', 'ev:job:1', ARGV[1])
redis.call('SET', KEYS[1] .. ':lock', ARGV[1], 'PX', 60000)
return redis.call('DEL', k)
