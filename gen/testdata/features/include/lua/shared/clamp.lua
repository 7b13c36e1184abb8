-- clamp: a body no longer than 512 bytes.
local function clamp(s)
  return string.sub(s, 1, 512)
end
