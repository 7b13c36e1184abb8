package runtime

// The package's tests reach these unexported helpers through the names below.

// InputParts exposes an Input's keys and arguments.
func InputParts(in Input) ([]string, []any) { return in.keys(), in.args() }

// InputArg and InputNumArgs expose Input.arg and Input.numArgs.
func InputArg(in *Input, i int) any { return in.arg(i) }
func InputNumArgs(in *Input) int    { return in.numArgs() }

// ArrayReplyOf and ValueReplyOf start decoding a reply of the script named script.
func ArrayReplyOf(script string, v any, n int) Reply { return arrayReply(script, v, n) }
func ValueReplyOf(script string, v any) Reply        { return valueReply(script, v) }

// KeySegment exposes keySegment.
func KeySegment(key string, skip, i int) string { return keySegment(key, skip, i) }
