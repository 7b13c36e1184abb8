-- redis.call handed to string.gsub, which calls it with each match.
redis.call('DEL', KEYS[1], KEYS[2])
return string.gsub(ARGV[1], '%S+', redis.call)
