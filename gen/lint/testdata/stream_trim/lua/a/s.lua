local trimmed = redis.call('XTRIM', KEYS[1], 'MAXLEN', 1000)
return redis.call('XADD', KEYS[1], '*', 'type', 'x', 'body', ARGV[1])
