#!lua flags=no-writes
-- settings_snapshot_get: reads a settings snapshot (seed 000 §6).
--
-- KEYS[1] snapshot
-- Reply: {found, value}; value is '' when not found (a nil would end the array)
local v = redis.call('GET', KEYS[1])
if not v then
  return {0, ''}
end
return {1, v}
