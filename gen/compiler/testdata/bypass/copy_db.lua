redis.call('COPY', KEYS[1], KEYS[2], 'DB', 2)
return #ARGV[1]
