-- What the spec allows: the parent's dependencies set built on a name read
-- from the job's hash, a message to every channel after the note, the lock
-- refreshed.
local parent = redis.call('HGET', KEYS[1], 'parent')
if parent then
  redis.call('SREM', parent .. ':deps', KEYS[1])
end
for i = 2, #ARGV do
  redis.call('PUBLISH', ARGV[i], ARGV[1])
end
return redis.call('PEXPIRE', KEYS[2], 1000)
