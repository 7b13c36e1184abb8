-- idem_finish: the owner of a running idempotency key stores its response,
-- which every retry then gets, for the retention.
--
-- KEYS[1] request    HASH owner, status, body
-- ARGV[1] owner      the token idem_begin was given
-- ARGV[2] status     HTTP status
-- ARGV[3] body       response body
-- ARGV[4] retention  ms the response is kept
-- Reply: 1
local key = KEYS[1]
if redis.call('HGET', key, 'owner') ~= ARGV[1] then
  return redis.error_reply('NOT_OWNER idem_finish: the key is not held by this request')
end
redis.call('HSET', key, 'status', ARGV[2], 'body', ARGV[3])
redis.call('HDEL', key, 'owner')
redis.call('PEXPIRE', key, ARGV[4])
return 1
