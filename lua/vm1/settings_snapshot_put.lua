-- settings_snapshot_put: stores a settings snapshot for 5 minutes (seed 000 §6).
--
-- KEYS[1] snapshot      MessagePack
-- ARGV[1] value
-- ARGV[2] ttl           ms (5 min)
-- Reply: stored (1)
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
