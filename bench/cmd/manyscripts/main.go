// Command manyscripts writes a luagen workspace of N copies of one script, for
// timing luagen generate against the number of scripts (BENCHMARKS.md, issue
// 20): keyspec.yaml declaring N scripts over two keys each, and
// lua/bench/s<i>.lua. The script is gen/luascript/testdata/limiter60.lua, 60
// lines with a helper, in the idioms both the dataflow reader and the reader
// before it accept (KEYS[n] in the calls, a helper that computes); -lines 7
// writes short7.lua, the 7-line script of the earlier measurement, instead.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	dir := flag.String("dir", "", "the directory to write the workspace into (created)")
	n := flag.Int("scripts", 1000, "how many scripts")
	lines := flag.Int("lines", 60, "60: the limiter with a helper; 7: the short script")
	testdata := flag.String("testdata", "../gen/luascript/testdata", "where limiter60.lua and short7.lua are (run from bench/)")
	flag.Parse()
	if *dir == "" || *n < 1 || (*lines != 60 && *lines != 7) {
		fmt.Fprintln(os.Stderr, "usage: manyscripts --dir D [--scripts N] [--lines 60|7]")
		os.Exit(2)
	}
	file := "limiter60.lua"
	if *lines == 7 {
		file = "short7.lua"
	}
	b, err := os.ReadFile(filepath.Join(*testdata, file))
	if err != nil {
		fail(err)
	}
	src := string(b)
	if got := strings.Count(src, "\n"); got != *lines {
		fmt.Fprintf(os.Stderr, "manyscripts: the script has %d lines, not %d\n", got, *lines)
		os.Exit(1)
	}
	if err := os.MkdirAll(filepath.Join(*dir, "lua", "bench"), 0o755); err != nil {
		fail(err)
	}
	var spec strings.Builder
	spec.WriteString(`version: 1
instances:
  bench:
    topology: standalone
    dbs:
      db0: {index: 0, url_env: BENCH_URL, user: bench}
users:
  bench:
    instance: bench
    select: {allow: false, reason: db0 only}
    key_prefixes: [{prefix: "b:", reason: the benchmark}]
keys:
  window:
    db: bench.db0
    pattern: "b:w:{id}"
    params: {id: {type: uuid}}
    value: [zset]
    ttl: {rule: clamped, max: 1h, from: the window argument}
  count:
    db: bench.db0
    pattern: "b:c:{id}"
    params: {id: {type: uuid}}
    value: [counter, string]
    ttl: {rule: clamped, max: 1h, from: the window argument}
scripts:
`)
	for i := 0; i < *n; i++ {
		name := fmt.Sprintf("s%d", i)
		if err := os.WriteFile(filepath.Join(*dir, "lua", "bench", name+".lua"), []byte(src), 0o644); err != nil {
			fail(err)
		}
		if *lines == 60 {
			fmt.Fprintf(&spec, `  %s:
    instance: bench
    keys: [{name: window, one_of: [window]}, {name: count, one_of: [count]}]
    cross_slot: "one standalone server"
    argv:
      - {name: limit, type: int, min: 1, max: 1000000}
      - {name: window_ms, type: int, min: 1, max: 3600000}
      - {name: request, type: uuid}
    reply:
      type_name: decision
      fields:
        - {name: allowed, type: bool}
        - {name: remaining, type: int}
        - {name: retry_after_ms, type: int}
        - {name: reset_at, type: time_ms}
    errors:
      - {code: BAD_LIMIT}
      - {code: BAD_WINDOW}
`, name)
			continue
		}
		fmt.Fprintf(&spec, `  %s:
    instance: bench
    keys: [{name: value, one_of: [count]}, {name: hits, one_of: [count]}]
    cross_slot: "one standalone server"
    argv: [{name: v, type: string, max_bytes: 64}]
    reply: {type: int, name: n}
`, name)
	}
	if err := os.WriteFile(filepath.Join(*dir, "keyspec.yaml"), []byte(spec.String()), 0o644); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "manyscripts:", err)
	os.Exit(1)
}
