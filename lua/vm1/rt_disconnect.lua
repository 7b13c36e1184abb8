-- rt_disconnect: removes a connection (seed 000 §5). A duplicate disconnect is
-- harmless and reports removed = 0.
--
-- KEYS[1] conn              HASH
-- KEYS[2] user_connections  ZSET
-- ARGV[1] connection_id
-- ARGV[2] user_id
-- Reply: {removed, connections left in the user's set}
if string.sub(KEYS[1], -(#ARGV[1] + 1)) ~= ':' .. ARGV[1] then
  return redis.error_reply('BAD_ARG rt_disconnect: KEYS[1] is not the key of ARGV connection_id')
end
if string.sub(KEYS[2], -(#ARGV[2] + 13)) ~= ':' .. ARGV[2] .. ':connections' then
  return redis.error_reply('BAD_ARG rt_disconnect: KEYS[2] is not the set of ARGV user_id')
end
local owner = redis.call('HGET', KEYS[1], 'user_id')
if owner and owner ~= ARGV[2] then
  return redis.error_reply('WRONG_USER rt_disconnect: the connection belongs to another user')
end
local removed = redis.call('ZREM', KEYS[2], ARGV[1]) + redis.call('DEL', KEYS[1])
local was = 0
if removed > 0 then
  was = 1
end
return {was, redis.call('ZCARD', KEYS[2])}
