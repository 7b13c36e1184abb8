-- rate_limit_token_bucket: token bucket as GCRA (seed 000 §3, §8, service routes).
-- `limit` tokens refill evenly over `window`; a full bucket allows a burst of
-- `limit`. Times are kept in units of 1/limit ms, so every quantity is an integer
-- and retry_after is exact to the millisecond.
--
-- The bucket stores the limit and window its tat is counted in. A bucket made
-- under another limit or window (a policy change while it lived), one of another
-- type (another algorithm) or one without them is read as a full bucket: it is
-- replaced by the next charge, never misread; a peek writes nothing.
--
-- KEYS[1] bucket        HASH base (ms), tat (1/limit ms after base), limit, window
-- ARGV[1] limit         bucket size and tokens per window
-- ARGV[2] window        refill period of `limit` tokens, ms
-- ARGV[3] jitter        extra TTL, ms
-- ARGV[4] cost          tokens this request takes
-- ARGV[5] peek          "1": evaluate without consuming (no writes)
-- Reply: {allowed, remaining, retry_after_ms, reset_at_ms}
local key = KEYS[1]
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local jitter = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])
local peek = ARGV[5] == '1'
if not (limit and window and jitter and cost) or limit < 1 or window < 1 or jitter < 0 or cost < 1 or cost > limit then
  return redis.error_reply('BAD_ARG rate_limit_token_bucket: want limit, window, cost >= 1, jitter >= 0 and cost <= limit')
end

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

-- tat relative to now, in 1/limit ms; 0 when the bucket is full.
local tat = 0
local typ = redis.call('TYPE', key)['ok']
local stale = typ ~= 'none'
if typ == 'hash' then
  local state = redis.call('HMGET', key, 'base', 'tat', 'limit', 'window')
  local base, stored = tonumber(state[1]), tonumber(state[2])
  if base and stored and tonumber(state[3]) == limit and tonumber(state[4]) == window then
    tat = math.max(stored - (now - base) * limit, 0)
    stale = false
  end
end

local burst = window * limit   -- the tolerance: a full bucket's worth of time
local new_tat = tat + window * cost
local allowed = new_tat <= burst
local retry_after = 0
if allowed then
  if not peek then
    if stale then
      redis.call('DEL', key)
    end
    tat = new_tat
    redis.call('HSET', key, 'base', now, 'tat', tat, 'limit', limit, 'window', window)
    redis.call('PEXPIRE', key, math.ceil(tat / limit) + jitter)
  end
else
  retry_after = math.ceil((new_tat - burst) / limit)
end

local left = tat
if peek and allowed then
  left = new_tat
end
local remaining = math.floor((burst - left) / window)
local reset_at = now + math.ceil(left / limit)
return {allowed and 1 or 0, remaining, retry_after, reset_at}
