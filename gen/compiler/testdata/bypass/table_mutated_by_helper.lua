-- A helper writes an argument into the table of keys it is handed.
local keys = {KEYS[1], KEYS[2]}
local function put(t, v) t[1] = v end
put(keys, ARGV[1])
return redis.call('DEL', keys[1], keys[2])
