-- A key grown in a loop from an argument: it can become any name.
local k = KEYS[1]
while #k < 64 do k = k .. ARGV[1] end
redis.call('PEXPIRE', KEYS[2], 60000)
return redis.call('DEL', k)
