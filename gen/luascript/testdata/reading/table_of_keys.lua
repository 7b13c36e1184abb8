-- Keys kept in a table, read by index and unpacked.
local keys = {KEYS[1], KEYS[2]}
local names = {wait = KEYS[1], active = KEYS[2]}
redis.call('DEL', unpack(keys))
return redis.call('LLEN', names.wait) + redis.call('LLEN', keys[2])
