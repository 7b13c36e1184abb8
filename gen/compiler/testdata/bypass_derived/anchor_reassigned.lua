-- The anchor's local is retargeted in a branch.
local job = KEYS[1]
if ARGV[2] == 'other' then job = ARGV[2] end
redis.call('HSET', KEYS[1], 'note', ARGV[2])
redis.call('PUBLISH', 'ev:job:1', ARGV[1])
return redis.call('SET', job .. ':lock', ARGV[1], 'PX', 60000)
