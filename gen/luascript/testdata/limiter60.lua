-- A sliding-window limiter with a helper: 60 lines.
-- KEYS[1] the window (zset of request times), KEYS[2] the caller's counter.
-- ARGV[1] the limit, ARGV[2] the window in ms, ARGV[3] this request's id.
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
if not limit or limit < 1 then
  return redis.error_reply('BAD_LIMIT limit must be a positive integer')
end
if not window or window < 1 then
  return redis.error_reply('BAD_WINDOW window must be a positive integer')
end

local function clamp(x, lo, hi)
  if x < lo then
    return lo
  end
  if x > hi then
    return hi
  end
  return x
end

local function nowMillis()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local now = nowMillis()
local start = now - window
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', start)
local used = redis.call('ZCARD', KEYS[1])
local allowed = 0
local retry = 0
if used < limit then
  redis.call('ZADD', KEYS[1], now, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], window)
  allowed = 1
  used = used + 1
else
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  if oldest[2] then
    retry = clamp(tonumber(oldest[2]) + window - now, 0, window)
  else
    retry = window
  end
end

local total = redis.call('INCR', KEYS[2])
if total == 1 then
  redis.call('PEXPIRE', KEYS[2], window)
end
local remaining = clamp(limit - used, 0, limit)
local reset = now + window
if allowed == 0 and retry == 0 then
  -- Never tell a refused caller to retry at once.
  retry = 1
end
-- allowed, remaining, retry_after_ms, reset_at
return {allowed, remaining, retry, reset}

