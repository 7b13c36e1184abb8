-- extend: ARGV[1] the TTL, ARGV[1 + i] the owner of KEYS[i].
if #ARGV - 1 ~= #KEYS then
  return redis.error_reply('BAD_ARG want one owner per resource')
end
local extended = 0
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[i + 1] then
    extended = extended + redis.call('PEXPIRE', KEYS[i], ARGV[1])
  end
end
return extended
