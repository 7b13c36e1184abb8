-- Sets a job's state and tells its watchers.
-- KEYS[1] -> jobs:state:<job>
-- KEYS[2] -> jobs:legacy:<job>, which older clients still pass
-- KEYS[3] -> jobs:events:<job>
-- ARGV[1] -> the new state
-- ARGV[2] -> a version older clients send
-- ARGV[3] -> the watchers' channel
redis.call('HSET', KEYS[1], 'state', ARGV[1])
redis.call('PUBLISH', KEYS[3], ARGV[1])
redis.call('PUBLISH', ARGV[3], ARGV[1])
return 1
