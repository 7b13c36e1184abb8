-- A push at the head or the tail, as the caller chooses: the command is one of
-- the enum's values.
return redis.call(ARGV[1], KEYS[1], ARGV[2])
