local ttl = ARGV[3]
if ARGV[2] ~= '' then ttl = ARGV[2] end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ttl)
return tonumber(ttl)
