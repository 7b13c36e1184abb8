-- stub_task_poll: the safety task get+increment poll (seed 000 §7), allowed only
-- here, in VM1 DB2 before the cutover. Polling does not extend the TTL.
--
-- KEYS[1] task          HASH state, polls
-- Reply: {found, state, polls}; state is '' when not found (a nil would end the array)
local state = redis.call('HGET', KEYS[1], 'state')
if not state then
  return {0, '', 0}
end
return {1, state, redis.call('HINCRBY', KEYS[1], 'polls', 1)}
