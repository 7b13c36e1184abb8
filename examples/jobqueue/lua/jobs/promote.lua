-- KEYS[1] the queue's job namespace, KEYS[2] its schedule, KEYS[3] its ready
-- list; ARGV[1] how many due jobs to move at most, ARGV[2] the ready list's
-- max_len. A due job stays scheduled while the ready list is full.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local keep = tonumber(ARGV[2])
local due = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, ARGV[1])
local moved = 0
for _, id in ipairs(due) do
  if redis.call('LLEN', KEYS[3]) >= keep then
    break
  end
  redis.call('ZREM', KEYS[2], id)
  redis.call('HSET', KEYS[1] .. id, 'state', 'ready')
  redis.call('RPUSH', KEYS[3], id)
  moved = moved + 1
end
redis.call('LTRIM', KEYS[3], 0, 99999)
return moved
