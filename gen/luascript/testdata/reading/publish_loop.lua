-- One message to every channel the caller names: the channels follow the
-- message in ARGV, and the loop starts past it.
local n = 0
for i = 2, #ARGV do
  n = n + redis.call('PUBLISH', ARGV[i], ARGV[1])
end
return n
