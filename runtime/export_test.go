package runtime

// InputParts exposes an Input's keys and arguments to the package's tests.
func InputParts(in Input) ([]string, []any) { return in.keys(), in.args() }
