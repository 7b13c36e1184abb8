-- release: deletes the caller's locks among KEYS, leaves the others'.
local released = 0
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[1] then
    released = released + redis.call('DEL', KEYS[i])
  end
end
return released
