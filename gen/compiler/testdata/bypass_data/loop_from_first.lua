-- A loop over every ARGV publishes to the note too.
local parent = redis.call('HGET', KEYS[1], 'parent')
redis.call('SREM', parent .. ':deps', KEYS[1])
redis.call('PEXPIRE', KEYS[2], 1000)
for i = 1, #ARGV do
  redis.call('PUBLISH', ARGV[i], ARGV[1])
end
return 1
