redis.call('COPY', KEYS[1], ARGV[1], 'REPLACE')
return redis.call('PEXPIRE', KEYS[2], 60000)
