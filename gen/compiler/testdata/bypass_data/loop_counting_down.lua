-- A loop counting down from 2 reaches ARGV[1].
local parent = redis.call('HGET', KEYS[1], 'parent')
redis.call('SREM', parent .. ':deps', KEYS[1])
redis.call('PEXPIRE', KEYS[2], 1000)
for i = 2, 0, -1 do
  redis.call('PUBLISH', ARGV[i], ARGV[1])
end
return 1
