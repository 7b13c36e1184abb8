redis.call('RENAME', KEYS[1], ARGV[1])
return redis.call('PEXPIRE', KEYS[2], 60000)
