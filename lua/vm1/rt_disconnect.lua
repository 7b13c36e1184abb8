-- rt_disconnect: removes a connection (seed 000 §5). A duplicate disconnect is
-- harmless and reports removed = 0.
--
-- KEYS[1] conn              HASH
-- KEYS[2] user_connections  ZSET
-- ARGV[1] connection_id
-- Reply: {removed, connections}
local removed = redis.call('ZREM', KEYS[2], ARGV[1]) + redis.call('DEL', KEYS[1])
local was = 0
if removed > 0 then
  was = 1
end
return {was, redis.call('ZCARD', KEYS[2])}
