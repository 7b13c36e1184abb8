-- The lock is built from the job's key; the channel from its literal start and
-- the id read back from the job's hash.
local id = redis.call('HGET', KEYS[1], 'id')
redis.call('SET', KEYS[1] .. ':lock', ARGV[1], 'PX', 60000, 'NX')
redis.call('HSET', KEYS[1], 'note', ARGV[2])
return redis.call('PUBLISH', 'ev:job:' .. id, 'locked')
