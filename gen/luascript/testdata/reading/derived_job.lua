-- A job queue: the job's id is popped from a list or read from a hash, and its
-- keys are built from the anchor passed in KEYS.
local rcall = redis.call
local id = rcall('RPOPLPUSH', KEYS[1], KEYS[2])
if not id then return false end
local jobKey = KEYS[3] .. ':' .. id
rcall('HSET', jobKey, 'state', 'active')
rcall('SET', jobKey .. ':lock', ARGV[1], 'PX', ARGV[2])
local parent = rcall('HGET', jobKey, 'parent')
if parent then
  rcall('SADD', KEYS[3] .. ':' .. parent .. ':deps', id)
end
rcall('PUBLISH', 'events:job:' .. id, 'active')
return {id, rcall('HGETALL', jobKey)}
