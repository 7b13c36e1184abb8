-- lock_acquire: SET NX PX with a fencing token (seed 000 §6). The token never goes
-- down for a lock name: it is max(last token + 1, Redis time in µs), so even a
-- counter that expired restarts above every token it gave.
--
-- KEYS[1] lock          owner token
-- KEYS[2] fence         last fencing token
-- ARGV[1] owner
-- ARGV[2] lock_ttl      ms
-- ARGV[3] fence_ttl     ms
-- Reply: {acquired, fence, ttl_ms of the current holder}
local lock_name = string.match(KEYS[1], ':lock:(.+)$')
local fence_name = string.match(KEYS[2], ':fence:(.+)$')
if not lock_name or lock_name ~= fence_name then
  return redis.error_reply('BAD_ARG lock_acquire: the lock and fence keys name different locks')
end
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {0, 0, math.max(redis.call('PTTL', KEYS[1]), 0)}
end
local t = redis.call('TIME')
local floor = tonumber(t[1]) * 1000000 + tonumber(t[2])
local last = tonumber(redis.call('GET', KEYS[2]) or '0')
local fence = math.max(last + 1, floor)
redis.call('SET', KEYS[2], fence, 'PX', ARGV[3])
return {1, fence, tonumber(ARGV[2])}
