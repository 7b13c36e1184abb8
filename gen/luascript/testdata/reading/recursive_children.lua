-- Removing a job removes its children first, however deep: a helper that
-- calls itself with each child's id read from the dependencies set.
local function removeJob(prefix, id)
  local children = redis.call('SMEMBERS', prefix .. ':' .. id .. ':deps')
  for _, child in ipairs(children) do
    removeJob(prefix, child)
  end
  redis.call('DEL', prefix .. ':' .. id .. ':deps', prefix .. ':' .. id)
  return #children
end
return removeJob(KEYS[1], ARGV[1])
