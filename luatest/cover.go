package luatest

import (
	"bytes"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"

	"github.com/hanchat/luagen/gen/luascript"
	"github.com/hanchat/luagen/luatest/coverprofile"
)

// CoverEnv names the environment variable that turns Lua coverage on: with
// LUAGEN_COVER=DIR, every script Load compiles is also compiled with a counter
// before each statement and at the start of each arm of each if, and every Run
// adds what it ran to counters in DIR (luatest/coverprofile), which luagen
// cover reports. The counters live in memory-mapped files, so they are
// complete however the test process ends. Line numbers, error messages and
// replies stay what they are without coverage.
const CoverEnv = "LUAGEN_COVER"

// coverage is one script's counters in this process.
type coverage struct {
	points []coverprofile.Point
	counts []uint64           // memory-mapped; added to atomically
	proto  *lua.FunctionProto // the instrumented chunk: takes the counter table, returns the script
}

// coverName is the local through which instrumented code reaches its counters.
const coverName = "__luagen_cover"

var coverState struct {
	once    sync.Once
	mu      sync.Mutex
	dir     string
	err     error
	scripts map[string]*coverage // by SHA1
	seq     int
}

// coverDir is the directory coverage goes to, "" when it is off.
func coverDir() string {
	coverState.once.Do(func() { coverState.dir = os.Getenv(CoverEnv) })
	coverState.mu.Lock()
	defer coverState.mu.Unlock()
	return coverState.dir
}

// SetCoverDir records the coverage of the scripts loaded from now on into dir,
// as LUAGEN_COVER=dir does from the start; "" stops recording (for scripts
// loaded afterwards: a Script keeps the counters it was loaded with). Tests
// that measure coverage themselves use it; luagen cover reads dir.
func SetCoverDir(dir string) {
	coverDir()
	coverState.mu.Lock()
	defer coverState.mu.Unlock()
	coverState.dir, coverState.scripts = dir, nil
}

// coverageFor is the counters of the script with this source, made (and its
// files written) on its first load in this process.
func coverageFor(sha, file string, src []byte) (*coverage, error) {
	dir := coverDir()
	if dir == "" {
		return nil, nil
	}
	coverState.mu.Lock()
	defer coverState.mu.Unlock()
	if c := coverState.scripts[sha]; c != nil {
		return c, nil
	}
	chunk, err := parse.Parse(bytes.NewReader(luascript.Body(src)), chunkName)
	if err != nil {
		return nil, &luascript.SyntaxError{File: file, Msg: err.Error()}
	}
	wrapped, points := coverprofile.Instrument(chunk, coverName)
	proto, err := compile(wrapped)
	if err != nil {
		return nil, fmt.Errorf("luatest: %s: compiling for coverage: %w", file, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("luatest: %s: %w", CoverEnv, err)
	}
	coverState.seq++
	stem := fmt.Sprintf("%s-%d-%d-%d", sha, os.Getpid(), time.Now().UnixNano(), coverState.seq)
	if err := coverprofile.WriteMeta(dir, stem, coverprofile.Meta{Version: coverprofile.Version, SHA1: sha, File: file, Points: points}); err != nil {
		return nil, fmt.Errorf("luatest: %s: %w", CoverEnv, err)
	}
	counts, err := mapCounters(coverprofile.CountsPath(dir, stem), len(points))
	if err != nil {
		return nil, fmt.Errorf("luatest: %s: %w", CoverEnv, err)
	}
	c := &coverage{points: points, counts: counts, proto: proto}
	if coverState.scripts == nil {
		coverState.scripts = map[string]*coverage{}
	}
	coverState.scripts[sha] = c
	return c, nil
}

// coveredScript is a script's instrumented function in one Lua state and the
// counter table its code adds to.
type coveredScript struct {
	fn     *lua.LFunction
	counts *lua.LTable
}

// mainFunction is the function a run of sc calls: the script's own, or, with
// coverage, its instrumented one, made once per state.
func (vm *luaVM) mainFunction(sc *Script) *lua.LFunction {
	if sc.cover == nil {
		return vm.L.NewFunctionFromProto(sc.proto)
	}
	if cs := vm.covered[sc.cover]; cs != nil {
		return cs.fn
	}
	L := vm.L
	counts := L.CreateTable(len(sc.cover.points), 0)
	for i := range sc.cover.points {
		counts.RawSetInt(i+1, lua.LNumber(0))
	}
	L.Push(L.NewFunctionFromProto(sc.cover.proto))
	L.Push(counts)
	L.Call(1, 1)
	fn := L.Get(-1).(*lua.LFunction)
	L.Pop(1)
	if vm.covered == nil {
		vm.covered = map[*coverage]*coveredScript{}
	}
	vm.covered[sc.cover] = &coveredScript{fn: fn, counts: counts}
	return fn
}

// collectCoverage adds what the run of sc counted to its counters and clears
// the state's table for the next run.
func (vm *luaVM) collectCoverage(sc *Script) {
	if sc.cover == nil {
		return
	}
	cs := vm.covered[sc.cover]
	if cs == nil {
		return
	}
	for i := range sc.cover.counts {
		if n, ok := cs.counts.RawGetInt(i + 1).(lua.LNumber); ok && n > 0 {
			atomic.AddUint64(&sc.cover.counts[i], uint64(n))
			cs.counts.RawSetInt(i+1, lua.LNumber(0))
		}
	}
}
