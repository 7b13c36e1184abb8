local page = redis.call('SCAN', 0, 'MATCH', 't:*')
for _, k in ipairs(page[2]) do redis.call('DEL', k) end
return redis.call('DEL', KEYS[1], KEYS[2]) + #ARGV[1]
