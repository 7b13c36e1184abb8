local key = KEYS[1]
local n = 0
for i = 1, 2 do
  n = n + redis.call('DEL', key)
  key = ARGV[1]
end
return n + redis.call('DEL', KEYS[2])
