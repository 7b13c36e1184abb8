redis.call('MSET', KEYS[1], 'x', ARGV[1], 'owner')
redis.call('PEXPIRE', KEYS[1], 60000)
return redis.call('PEXPIRE', KEYS[2], 60000)
