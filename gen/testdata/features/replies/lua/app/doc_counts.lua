#!lua flags=no-writes
-- One count per question, in a fixed order: an array of integers.
local results = {}
results[1] = redis.call('EXISTS', KEYS[1])
results[2] = redis.call('HLEN', KEYS[1])
results[3] = redis.call('HSTRLEN', KEYS[1], 'title')
return results
