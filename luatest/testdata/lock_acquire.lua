-- Takes a lock for ARGV[1] for ARGV[2] ms. Reply: 1 when taken, 0 when held.
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return 1
end
return 0
