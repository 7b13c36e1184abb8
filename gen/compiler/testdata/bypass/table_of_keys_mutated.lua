-- A table of keys that gains an argument before it is unpacked.
local keys = {KEYS[1], KEYS[2]}
keys[#keys + 1] = ARGV[1]
return redis.call('DEL', unpack(keys))
