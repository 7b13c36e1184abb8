#!lua flags=no-writes
-- rt_connections: at most `limit` live connections of a user, those whose last
-- heartbeat is within the connection TTL (seed 000 §5): a heartbeat at ms h is live
-- up to h + conn_ttl inclusive, exactly as long as its connection hash exists.
--
-- KEYS[1] user_connections  ZSET connection_id -> last heartbeat (ms)
-- ARGV[1] limit
-- ARGV[2] conn_ttl          ms (90 s)
-- Reply: connection ids, oldest heartbeat first
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return redis.call('ZRANGE', KEYS[1], now - tonumber(ARGV[2]), '+inf', 'BYSCORE', 'LIMIT', 0, tonumber(ARGV[1]))
