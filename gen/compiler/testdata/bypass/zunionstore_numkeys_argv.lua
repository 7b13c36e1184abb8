redis.call('ZUNIONSTORE', KEYS[1], ARGV[1], KEYS[2], 't:victim')
return redis.call('PEXPIRE', KEYS[1], 60000)
