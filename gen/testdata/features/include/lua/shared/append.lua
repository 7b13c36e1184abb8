-- append: XADD trimmed to the stream's max_len, which the wrapper sends as ARGV[1].
--- @include "clamp"
local function append(body)
  return redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', 'body', clamp(body))
end
