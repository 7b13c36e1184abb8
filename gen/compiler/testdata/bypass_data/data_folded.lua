-- A name the reading folds, growing in a loop from an argument: it is no
-- longer a name read from data alone.
local parent = redis.call('HGET', KEYS[1], 'parent')
local k = parent
for i = 1, 10 do
  k = k .. ARGV[1]
end
redis.call('PUBLISH', ARGV[2], ARGV[1])
redis.call('PEXPIRE', KEYS[2], 1000)
return redis.call('DEL', k .. ':deps')
