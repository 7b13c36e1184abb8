-- elang_rate_limit_fixed: lua/vm1/rate_limit_fixed.lua on the Elang deployment prefix (Elang Redis doc,
-- seed 003: rate limits). The same Lua but for the script name in its comments and
-- error text; services/elang's TestRateLimitScriptsAreVM1Algorithms keeps it so.
--
-- rate_limit_fixed: fixed-window counter (seed 000 §3, §8). INCRBY and the first
-- PEXPIRE run in one script, so no counter is ever left without expiry. The window
-- opens with its first request and lasts window + jitter.
--
-- KEYS[1] bucket        counter
-- ARGV[1] limit         units allowed per window
-- ARGV[2] window        window length, ms
-- ARGV[3] jitter        extra TTL, ms (from Go, spreads expiries)
-- ARGV[4] cost          units this request consumes
-- ARGV[5] peek          "1": evaluate without consuming (no writes)
-- Reply: {allowed, remaining, retry_after_ms, reset_at_ms}
local key = KEYS[1]
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local jitter = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])
local peek = ARGV[5] == '1'
if not (limit and window and jitter and cost) or limit < 1 or window < 1 or jitter < 0 or cost < 1 or cost > limit then
  return redis.error_reply('BAD_ARG elang_rate_limit_fixed: want limit, window, cost >= 1, jitter >= 0 and cost <= limit')
end

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

-- A bucket of another type, or a string that is no counter, was left by another
-- writer (an algorithm change while it lived). Buckets are disposable: it is
-- dropped, or read as empty by a peek.
local typ = redis.call('TYPE', key)['ok']
local count, expires = 0, -2
local foreign = typ ~= 'none'
if typ == 'string' then
  local raw = redis.call('GET', key)
  if raw == '0' or (#raw <= 15 and string.match(raw, '^[1-9]%d*$')) then
    count = tonumber(raw)
    expires = redis.call('PEXPIRETIME', key)
    foreign = false
  end
end
if foreign and not peek then
  redis.call('DEL', key)
end

if expires == -1 and not peek then
  -- A counter without expiry would never reset: give it one.
  redis.call('PEXPIRE', key, window + jitter)
  expires = redis.call('PEXPIRETIME', key)
end
local allowed = count + cost <= limit
if allowed and not peek then
  count = redis.call('INCRBY', key, cost)
  if expires == -2 then
    -- The first request of the window.
    redis.call('PEXPIRE', key, window + jitter)
    expires = redis.call('PEXPIRETIME', key)
  end
end
if expires < 0 then
  expires = now + window + jitter -- a peek: as if this request opened the window
end

local remaining = limit - count
if peek and allowed then
  remaining = remaining - cost
end
-- A key whose expiry is T is still there at T and gone at T + 1 ms. TIME is
-- read after the script started, whose start time decides what has expired: a
-- key due at the millisecond TIME reads is still here, and a client waiting
-- 1 ms finds it gone.
local reset_at = expires + 1
local retry_after = 0
if not allowed then
  retry_after = math.max(reset_at - now, 1)
end
return {allowed and 1 or 0, remaining, retry_after, reset_at}
