-- An index computed from the counter is not the counter.
local parent = redis.call('HGET', KEYS[1], 'parent')
redis.call('SREM', parent .. ':deps', KEYS[1])
redis.call('PEXPIRE', KEYS[2], 1000)
for i = 2, #ARGV do
  redis.call('PUBLISH', ARGV[i - 1], ARGV[1])
end
return 1
