-- Old scripts switch on effects replication: a no-op in Redis 7.
redis.replicate_commands()
local now = redis.call('TIME')
return redis.call('ZADD', KEYS[1], now[1], ARGV[1])
