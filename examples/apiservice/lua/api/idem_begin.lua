-- idem_begin: the first request of an idempotency key takes it for its owner
-- for a lease; a retry finds it running, or done with the response stored.
--
-- KEYS[1] request  HASH owner (while running) or status and body (once done)
-- ARGV[1] owner    the token of the request that would run
-- ARGV[2] lease    ms a running request holds the key
-- Reply: {state, status, body}
local key = KEYS[1]
local held = redis.call('HMGET', key, 'owner', 'status', 'body')
if held[2] then
  return {'done', tonumber(held[2]), held[3]}
end
if held[1] then
  return {'running', 0, false}
end
redis.call('HSET', key, 'owner', ARGV[1])
redis.call('PEXPIRE', key, ARGV[2])
return {'started', 0, false}
