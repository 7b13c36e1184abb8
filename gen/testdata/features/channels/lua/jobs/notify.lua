-- notify: ARGV[1] is a channel, passed by the caller as an argument.
local state = redis.call('HGET', KEYS[1], 'state') or 'gone'
return redis.call('PUBLISH', ARGV[1], state)
