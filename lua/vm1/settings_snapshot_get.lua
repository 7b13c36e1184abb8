#!lua flags=no-writes
-- settings_snapshot_get: reads a settings snapshot (seed 000 §6).
--
-- KEYS[1] snapshot
-- Reply: {found, value}
local v = redis.call('GET', KEYS[1])
if not v then
  return {0, false}
end
return {1, v}
