-- Names built with string.format from a literal format.
local lock = string.format('%s:lock', KEYS[1])
redis.call('SET', lock, ARGV[1], 'PX', 30000)
return redis.call('PUBLISH', string.format('events:%s', ARGV[2]), ARGV[1])
