redis.call = function() return 0 end
return redis.pcall('DEL', KEYS[1], KEYS[2], ARGV[1])
