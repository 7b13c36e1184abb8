local n = redis.call('INCRBY', KEYS[1], ARGV[1])
if n == tonumber(ARGV[1]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
if ARGV[3] ~= '' then
  redis.log(redis.LOG_NOTICE, ARGV[3])
end
return n
