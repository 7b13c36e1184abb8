-- One outbox row, appended once: a dedupe key kept seven days remembers the entry id,
-- so a relay that crashed after the XADD and before its SQL mark appends nothing the
-- second time and still learns the id to mark.
local earlier = redis.call('GET', KEYS[2])
if earlier then
  return {0, earlier}
end
local id = redis.call('XADD', KEYS[1], 'MAXLEN', ARGV[5], '*',
  'message_id', ARGV[1], 'kind', ARGV[2], 'channel', ARGV[3], 'ref', ARGV[4])
redis.call('SET', KEYS[2], id, 'PX', ARGV[6])
return {1, id}
