--- @include "../shared/append"
--- @include "../shared/clamp"
append(ARGV[2])
return append(clamp(ARGV[2]))
