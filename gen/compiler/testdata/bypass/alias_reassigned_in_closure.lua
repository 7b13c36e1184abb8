local key = KEYS[1]
local function retarget() key = ARGV[1] end
retarget()
return redis.call('DEL', key, KEYS[2])
