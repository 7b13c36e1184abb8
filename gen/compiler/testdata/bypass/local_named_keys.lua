local KEYS = {ARGV[1]}
return redis.call('DEL', KEYS[1])
