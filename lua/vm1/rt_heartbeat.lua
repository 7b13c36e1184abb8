-- rt_heartbeat: refreshes a connection and its membership atomically (seed 000 §5).
--
-- KEYS[1] conn              HASH user_id, instance, last_seen, subscriptions_count
-- KEYS[2] user_connections  ZSET connection_id -> last heartbeat (ms)
-- ARGV[1] connection_id
-- ARGV[2] user_id
-- ARGV[3] instance
-- ARGV[4] subscriptions
-- ARGV[5] conn_ttl          ms (90 s)
-- ARGV[6] set_ttl           ms (120 s)
-- Reply: {created, connections}
if string.sub(KEYS[1], -(#ARGV[1] + 1)) ~= ':' .. ARGV[1] then
  return redis.error_reply('BAD_ARG rt_heartbeat: KEYS[1] is not the key of ARGV connection_id')
end
if string.sub(KEYS[2], -(#ARGV[2] + 13)) ~= ':' .. ARGV[2] .. ':connections' then
  return redis.error_reply('BAD_ARG rt_heartbeat: KEYS[2] is not the set of ARGV user_id')
end
local owner = redis.call('HGET', KEYS[1], 'user_id')
if owner and owner ~= ARGV[2] then
  return redis.error_reply('WRONG_USER rt_heartbeat: the connection belongs to another user')
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', KEYS[1], 'user_id', ARGV[2], 'instance', ARGV[3], 'last_seen', now,
  'subscriptions_count', ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
redis.call('ZADD', KEYS[2], now, ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[6])
local created = 1
if owner then
  created = 0
end
return {created, redis.call('ZCARD', KEYS[2])}
