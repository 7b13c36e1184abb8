local n = redis.call('INCRBY', KEYS[1], ARGV[2])
if n == tonumber(ARGV[2]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
end
if ARGV[3] ~= '' then
  redis.log(redis.LOG_NOTICE, ARGV[3])
end
return n
