-- record: KEYS[2] and ARGV[1] are what v1 clients pass; this script reads neither.
-- ARGV[2], the player's 64-bit id, is a ZSET member: passed through as text, exact.
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[2])
for i = 4, #ARGV do
  redis.log(redis.LOG_DEBUG, 'tag ' .. ARGV[i])
end
return redis.call('ZREVRANK', KEYS[1], ARGV[2])
