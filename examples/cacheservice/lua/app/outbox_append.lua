-- once per message id: the dedupe key is taken first, so a retry adds nothing
if not redis.call('SET', KEYS[2], '1', 'NX', 'PX', ARGV[4]) then
  return false
end
return redis.call('XADD', KEYS[1], 'MAXLEN', 1000, '*', 'message_id', ARGV[1], 'type', ARGV[2], 'body', ARGV[3])
