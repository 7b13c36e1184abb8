-- rate_limit: the generic cell rate algorithm over one string key, the
-- client's theoretical arrival time (tat): when the client's next request would
-- be due if it sent at the average rate. A request is allowed while tat stays
-- within burst intervals of now; each allowed request pushes tat one interval
-- (period / limit) later per unit of cost. Times are integer microseconds.
--
-- KEYS[1] client   STRING tat, microseconds since the epoch
-- ARGV[1] limit    requests per period
-- ARGV[2] period   ms
-- ARGV[3] burst    requests allowed at once (at most limit)
-- ARGV[4] cost     requests this call counts for (at most burst)
-- Reply: {allowed, remaining, retry_after_ms, reset_after_ms}
local key = KEYS[1]
local limit = tonumber(ARGV[1])
local period = tonumber(ARGV[2])
local burst = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])
if burst > limit or cost > burst then
  return redis.error_reply('BAD_ARG rate_limit: want cost <= burst <= limit')
end

local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
local interval = math.floor(period * 1000 / limit)
local tolerance = interval * burst

local tat = tonumber(redis.call('GET', key)) or now
if tat < now then
  tat = now
end
local next_tat = tat + interval * cost
local allow_at = next_tat - tolerance
if allow_at > now then
  local ahead = tat - now
  return {0, math.floor((tolerance - ahead) / interval), math.ceil((allow_at - now) / 1000), math.ceil(ahead / 1000)}
end
local ahead = next_tat - now
redis.call('SET', key, string.format('%.0f', next_tat), 'PX', math.ceil(ahead / 1000))
return {1, math.floor((tolerance - ahead) / interval), 0, math.ceil(ahead / 1000)}
