if redis.call('EXISTS', KEYS[2]) == 0 then
  return 0
end
redis.call('SET', KEYS[1], '1', 'PX', ARGV[1])
return 1
