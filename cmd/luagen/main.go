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
	"runtime/debug"
)

// gcPercent is the garbage collector's target for luagen's own process: a run
// reads the whole spec and every script, renders and exits, so collecting a
// quarter as often trades a peak of some 180 MB (a thousand scripts) for a
// fifth less CPU (BENCHMARKS.md, issue 20). GOGC set in the environment wins.
const gcPercent = 400

func main() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
