local ttl = 30000
if ARGV[2] ~= '' then ttl = tonumber(ARGV[2]) end
local _ = {ARGV[3], ARGV[4], ARGV[5], ARGV[6]}
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ttl) then return 1 end
return 0
