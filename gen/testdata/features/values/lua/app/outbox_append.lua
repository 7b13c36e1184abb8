return redis.call('XADD', KEYS[1], 'MAXLEN', '~', 10000, '*', 'type', ARGV[1], 'body', ARGV[2])
