-- KEYS[1] the job's hash, KEYS[2] its queue; ARGV[1] the job's id, ARGV[2] its payload.
-- Neither key gets a TTL: the spec says ttl none. The queue keeps at most its
-- max_len (10000) ids: luagen generate refuses an LTRIM that keeps more.
redis.call('HSET', KEYS[1], 'state', 'waiting', 'payload', ARGV[2])
local waiting = redis.call('LPUSH', KEYS[2], ARGV[1])
redis.call('LTRIM', KEYS[2], 0, 9999)
return math.min(waiting, 10000)
