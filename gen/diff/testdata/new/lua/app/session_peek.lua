#!lua flags=no-writes
if redis.call('EXISTS', KEYS[2]) == 0 then
  return 0
end
return redis.call('PTTL', KEYS[1])
