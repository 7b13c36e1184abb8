if redis.call('EXISTS', KEYS[2]) == 0 then
  return 0
end
redis.call('SET', KEYS[1], '1', 'PX', ARGV[1])
redis.call('PEXPIRE', KEYS[2], 7200000)
return 1
