local lease = ARGV[3]
if ARGV[2] ~= '' then lease = ARGV[2] end
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', lease) then
  return 1
end
return 0
