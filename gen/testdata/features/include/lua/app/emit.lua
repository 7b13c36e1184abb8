--- @include "../shared/append"
return append(ARGV[2])
