local function del(redis, key) return redis.call('DEL', key) end
local fake = {call = function() return 0 end}
return del(fake, ARGV[1]) + redis.call('DEL', KEYS[1], KEYS[2])
