-- table.sort calls its comparator where the reading cannot see.
redis.call('PEXPIRE', KEYS[1], 60000)
table.sort({KEYS[2], ARGV[1]}, function(a, b) redis.call('DEL', a) return a < b end)
return 1
