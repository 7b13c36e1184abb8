-- A loop counter the body moves back: it may index the note.
local parent = redis.call('HGET', KEYS[1], 'parent')
redis.call('SREM', parent .. ':deps', KEYS[1])
redis.call('PEXPIRE', KEYS[2], 1000)
for i = 2, #ARGV do
  i = i - 1
  redis.call('PUBLISH', ARGV[i], ARGV[1])
end
return 1
