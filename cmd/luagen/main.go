// Command luagen generates typed Go for the Redis keys, channels, ACL users and Lua
// scripts declared in keyspec.yaml, checks that generated code is current, and
// lints the spec and the scripts.
//
//	luagen generate [--spec keyspec.yaml] [--lua lua] [--out generated] [--instance NAME] [--client go-redis|rueidis]
//	luagen check    [--spec keyspec.yaml] [--lua lua] [--out generated] [--instance NAME] [--client go-redis|rueidis]
//	luagen lint     [--spec keyspec.yaml] [--lua lua]
//
// Exit status: 0 success, 1 a problem was found (invalid spec or Lua, drift, lint
// findings), 2 the command line was wrong.
package main

import (
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
