-- enqueue: KEYS[3] is the queue's channel, passed by the caller like a key.
redis.call('HSET', KEYS[1], 'state', 'waiting', 'payload', ARGV[2])
local depth = redis.call('LPUSH', KEYS[2], ARGV[1])
redis.call('LTRIM', KEYS[2], 0, 999)
redis.call('PUBLISH', KEYS[3], 'waiting ' .. ARGV[1])
redis.call('PUBLISH', 'jobs:events:all', 'waiting ' .. ARGV[1])
return math.min(depth, 1000)
