-- redis.call and redis.pcall kept in locals that are never reassigned, the way
-- large job-queue libraries call Redis.
local rcall = redis.call
local pcall_redis = redis.pcall
local state = rcall('HGET', KEYS[1], 'state')
if state == 'done' then
  return pcall_redis('DEL', KEYS[2])
end
return rcall('HSET', KEYS[1], 'state', ARGV[1])
