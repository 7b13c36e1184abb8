-- Helpers called with KEYS positions: each call site is read with its own keys,
-- through two levels of helpers and a helper that returns its key.
local rcall = redis.call
local function maxEvents(metaKey)
  local n = rcall('HGET', metaKey, 'opts.maxLenEvents')
  if not n then
    rcall('HSET', metaKey, 'opts.maxLenEvents', 10000)
    return 10000
  end
  return tonumber(n)
end
local function trim(metaKey, eventsKey)
  return rcall('XTRIM', eventsKey, 'MAXLEN', '~', maxEvents(metaKey))
end
local function pick(k) return k end
trim(KEYS[3], KEYS[4])
rcall('DEL', pick(KEYS[2]), KEYS[1])
return maxEvents(KEYS[3])
