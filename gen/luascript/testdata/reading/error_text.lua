-- A free-text error reply, as some libraries write them: callers match its
-- first word.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return redis.error_reply('job not found: ' .. ARGV[1])
end
return redis.call('HGET', KEYS[1], 'state')
