-- rt_cleanup: removes at most `batch` members whose heartbeat is older than the
-- connection TTL (seed 000 §5): bounded work, never a scan of the whole set.
-- A member is stale once its connection hash has expired: the hash lives conn_ttl
-- after the heartbeat and Redis drops it only when the clock is strictly past that,
-- so a heartbeat at ms h is stale from h + conn_ttl + 1 on.
--
-- KEYS[1] user_connections  ZSET connection_id -> last heartbeat (ms)
-- ARGV[1] batch
-- ARGV[2] conn_ttl          ms (90 s)
-- Reply: {removed, more}
local batch = tonumber(ARGV[1])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local stale_upto = now - tonumber(ARGV[2]) - 1
local stale = redis.call('ZRANGE', KEYS[1], '-inf', stale_upto, 'BYSCORE', 'LIMIT', 0, batch)
if #stale > 0 then
  redis.call('ZREM', KEYS[1], unpack(stale))
end
local more = 0
if redis.call('ZCOUNT', KEYS[1], '-inf', stale_upto) > 0 then
  more = 1
end
return {#stale, more}
