-- The length of each state's list the caller names, built from the queue's
-- prefix: each state is one of the enum's values.
local out = {}
for i = 1, #ARGV do
  out[#out + 1] = tostring(redis.call('LLEN', KEYS[1] .. ARGV[i]))
end
return out
