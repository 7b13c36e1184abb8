-- stub_task_create: creates the legacy stub's task with its random state, chosen in
-- Go (seed 000 §7). Only while vm1.db2 is alive.
--
-- KEYS[1] task          HASH state, polls
-- ARGV[1] state
-- ARGV[2] ttl           ms (above the poll/recovery budget)
-- Reply: created (0 when the task exists)
if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
redis.call('HSET', KEYS[1], 'state', ARGV[1], 'polls', 0)
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
