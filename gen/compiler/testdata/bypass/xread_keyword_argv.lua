local r = redis.call('XREAD', 'COUNT', ARGV[1], 'STREAMS', KEYS[1], '0-0')
return redis.call('DEL', KEYS[2])
