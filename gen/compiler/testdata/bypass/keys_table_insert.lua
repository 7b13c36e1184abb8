table.insert(KEYS, ARGV[1])
for i = 1, #KEYS do redis.call('DEL', KEYS[i]) end
return #KEYS
