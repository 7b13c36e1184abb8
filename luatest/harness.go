package luatest

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/ast"
	"github.com/yuin/gopher-lua/parse"

	"github.com/hanchat/luagen/gen/luascript"
)

// DefaultScriptTimeout is how long a Run may take before the harness stops the
// script, when Server.ScriptTimeout is zero.
const DefaultScriptTimeout = 10 * time.Second

// chunkName is the name Redis 7.0 compiles every script under: errors read
// "user_script:<line>: ..." and end with "on @user_script:<line>.".
const chunkName = "user_script"

// Server is an in-memory Redis keyspace (one logical database) with TTLs that
// follow its Clock. It runs scripts one at a time, like Redis; it is safe for
// concurrent use.
type Server struct {
	// ScriptTimeout bounds each Run (DefaultScriptTimeout when zero). Set it
	// before the Server is used.
	ScriptTimeout time.Duration

	// FreshState makes every Run build a new Lua state and close it afterwards,
	// instead of taking a sandboxed state from the pool shared by all Servers
	// and returning it (reset) after the run. Runs behave the same either way;
	// a fresh state costs about ten times as much. Set it before the Server is
	// used.
	FreshState bool

	mu         sync.Mutex
	clock      *Clock
	db         *db
	rand       rand48                        // math.random
	rng        *rand.Rand                    // SPOP, SRANDMEMBER
	registered map[string]*registeredCommand // by Redis's name: "dump", "object|encoding"
}

// NewServer returns an empty Server whose keys expire by clock (a new Clock at
// the current time when clock is nil).
func NewServer(clock *Clock) *Server {
	if clock == nil {
		clock = NewClock(time.Now())
	}
	s := &Server{clock: clock, db: newDB()}
	s.rand.reset()
	return s
}

// Clock is the Server's clock.
func (s *Server) Clock() *Clock { return s.clock }

// Script is a loaded script, ready to Run on any Server.
type Script struct {
	file  string
	src   []byte
	sha   string
	info  *luascript.Info
	proto *lua.FunctionProto
	cover *coverage // the script's coverage counters, when LUAGEN_COVER is set (cover.go)
}

// File is the name the script was loaded under.
func (sc *Script) File() string { return sc.file }

// SHA1 is the hex SHA1 Redis knows the script by (of the whole source, shebang
// included); Redis puts it in the errors a script raises.
func (sc *Script) SHA1() string { return sc.sha }

// Source is the script as it was loaded, shebang included: what EVAL sends.
func (sc *Script) Source() []byte { return append([]byte(nil), sc.src...) }

// Info is luascript's static reading of the script.
func (sc *Script) Info() *luascript.Info { return sc.info }

// ReadOnly reports whether the script declares the no-writes flag; Redis then
// refuses its write commands.
func (sc *Script) ReadOnly() bool { return sc.info.HasFlag("no-writes") }

// Load compiles a script. file names it in errors. What Redis would refuse to
// load is a *luascript.SyntaxError naming file and line: Lua 5.2 syntax (goto,
// labels), a bad shebang (Msg is then Redis's text, e.g. "Unexpected flag in
// script shebang: what?"), or a Lua syntax error.
func (s *Server) Load(file string, src []byte) (*Script, error) {
	return Load(file, src)
}

// LoadFile reads and compiles the script at path; errors name the file as path.
func (s *Server) LoadFile(path string) (*Script, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("luatest: %w", err)
	}
	return Load(path, src)
}

// Load compiles a script; see Server.Load. A Script does not belong to a Server.
// A source is read and compiled once: loading the same text again (under any
// file name) reuses the compiled function, kept by the source's SHA1.
func Load(file string, src []byte) (*Script, error) {
	sum := sha1.Sum(src)
	sha := hex.EncodeToString(sum[:])
	c := cachedCompile(sha)
	if c == nil {
		flags, hasShebang, shebangErr := readShebang(src)
		if shebangErr != "" {
			return nil, &luascript.SyntaxError{File: file, Line: 1, Msg: shebangErr}
		}
		analyzed := src
		if hasShebang {
			analyzed = canonicalShebang(src, flags)
		}
		info, err := luascript.Analyze(file, analyzed)
		if err != nil {
			return nil, err
		}
		chunk, err := parse.Parse(bytes.NewReader(luascript.Body(src)), chunkName)
		if err != nil {
			// Analyze parsed the same text; keep the file's name in the error all the same.
			return nil, &luascript.SyntaxError{File: file, Msg: err.Error()}
		}
		proto, err := compile(chunk)
		if err != nil {
			se := &luascript.SyntaxError{File: file, Msg: err.Error()}
			var ce *lua.CompileError
			if errors.As(err, &ce) {
				se.Line, se.Msg = ce.Line, ce.Message
			}
			return nil, se
		}
		c = &compiled{info: info, proto: proto}
		storeCompiled(sha, c)
	}
	info := *c.info
	info.File = file
	cover, err := coverageFor(sha, file, src)
	if err != nil {
		return nil, err
	}
	return &Script{file: file, src: append([]byte(nil), src...), sha: sha, info: &info, proto: c.proto, cover: cover}, nil
}

// compiled is what Load keeps of a source, by its SHA1: the static reading and
// the compiled function (a FunctionProto is immutable once compiled, so every
// Lua state may run it).
type compiled struct {
	info  *luascript.Info
	proto *lua.FunctionProto
}

// maxCompiled bounds the compile cache; when it is full it starts over.
const maxCompiled = 4096

var compileCache struct {
	mu sync.Mutex
	m  map[string]*compiled
}

func cachedCompile(sha string) *compiled {
	compileCache.mu.Lock()
	defer compileCache.mu.Unlock()
	return compileCache.m[sha]
}

func storeCompiled(sha string, c *compiled) {
	compileCache.mu.Lock()
	defer compileCache.mu.Unlock()
	if compileCache.m == nil || len(compileCache.m) >= maxCompiled {
		compileCache.m = map[string]*compiled{}
	}
	compileCache.m[sha] = c
}

func compile(chunk []ast.Stmt) (proto *lua.FunctionProto, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	return lua.Compile(chunk, chunkName)
}

// Result is what one Run did.
type Result struct {
	// Reply is the script's reply as go-redis (RESP2) hands it to a client:
	// int64, string, nil or []any (nested; an error inside an array is an
	// *ErrorReply). It is nil when Err is set. A status reply and a bulk
	// string are both a string here, as go-redis gives them; Typed tells them
	// apart.
	Reply any
	// Typed is Reply with the RESP type of every string kept: a status reply
	// (redis.status_reply, {ok=...}, a command's +OK) is a Status, a bulk
	// string a string; the rest is as in Reply.
	Typed any
	// Err is non-nil when the script answered with an error reply or failed: an
	// *ErrorReply (errors.As) carrying the text a client sees. Other errors
	// are the harness's own (a bad argument to Run, a timeout).
	Err error
	// Commands lists every redis.call/redis.pcall that reached the command
	// table, in order.
	Commands []Command
	// Touched lists the distinct keys the commands named, in first-touch order.
	Touched []string
	// Written lists the distinct keys the commands modified, in first-write order.
	Written []string
	// TTLs holds, per key, the last time to live a command put on it during the
	// run (EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT, SET EX/PX/EXAT/PXAT), relative
	// to the clock. A later PERSIST or SET without KEEPTTL does not remove it;
	// Server.Keyspace tells the state after the run.
	TTLs map[string]time.Duration
	// Logs holds the messages of redis.log, in order.
	Logs []string
	// Published holds the messages PUBLISH sent, in order.
	Published []Message
	// Violations lists the project's rules the run broke; it is empty when the
	// run obeyed them: every key a command names is in KEYS, every key written
	// is left with a TTL (or deleted), no SELECT.
	Violations []string

	file    string
	stateID uint64 // the Lua state the run used (luaVM.id)
}

// Check is nil when the run broke no rule, else an error listing the violations.
func (r *Result) Check() error {
	if len(r.Violations) == 0 {
		return nil
	}
	return fmt.Errorf("luatest: %s broke %d rule(s):\n  - %s", r.file, len(r.Violations), strings.Join(r.Violations, "\n  - "))
}

// IsStatus reports whether the reply was a status reply (+OK) rather than a
// bulk string.
func (r *Result) IsStatus() bool {
	_, ok := r.Typed.(Status)
	return ok
}

// Status is a status reply (RESP simple string) in Result.Typed.
type Status string

// ErrorReply is an error reply as a client sees it.
type ErrorReply struct {
	// Msg is the reply's text without the leading '-', e.g.
	// "NOT_OWNER lock held by another owner" or
	// "ERR user_script:3: boom script: <sha1>, on @user_script:3.".
	Msg string
}

// Error returns Msg, the reply as a client sees it.
func (e *ErrorReply) Error() string { return e.Msg }

// Code is the first word of the reply: ERR, WRONGTYPE, NOT_OWNER...
func (e *ErrorReply) Code() string {
	code, _, _ := strings.Cut(e.Msg, " ")
	return code
}

// RedisError marks ErrorReply as a reply from Redis, as go-redis's redis.Error
// interface expects.
func (e *ErrorReply) RedisError() {}

// Command is one command a script sent.
type Command struct {
	Name string   // lower-case
	Args []string // the arguments after the name
	Keys []string // the arguments that are keys
}

// Message is one PUBLISH.
type Message struct {
	Channel string
	Payload string
}

// Keyspace is the live keyspace now: expired keys are dropped first.
func (s *Server) Keyspace() Keyspace {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.db.snapshot(s.clock.unixMilli())
}

// Do runs one command directly against the keyspace, as a client would (for
// test set-up and inspection). Arguments are encoded as go-redis encodes them;
// the reply is converted as go-redis gives it (see Result.Reply), and an error
// reply is returned as an *ErrorReply. Do records nothing and checks no rules.
func (s *Server) Do(args ...any) (any, error) {
	argv, err := encodeCommand(args, "Do")
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return replyResult(s.clientCall(argv, s.clock.unixMilli(), nil))
}

// clientCall runs a command as a client's call: Redis's checks for a client,
// then the command. run is the script the call belongs to, if any.
func (s *Server) clientCall(argv []string, now int64, run *runState) reply {
	if strings.EqualFold(argv[0], "select") {
		return errSelect
	}
	rt, unknown, ok := s.routeFor(argv)
	switch {
	case !ok:
		return unknown
	case !rt.arityOK(len(argv)):
		return arityError(rt.name)
	case rt.fn == nil:
		return notImplemented(rt)
	}
	spelled := argv[0]
	argv[0] = strings.ToLower(argv[0])
	return rt.call(&cmdCtx{s: s, argv: argv, now: now, run: run, keys: rt.keys(argv), name: spelled})
}

const errSelect = errReply("ERR luatest: SELECT is refused: a script must stay in the database its caller chose")

// Run executes the script once, in a sandboxed Lua state, with KEYS and
// ARGV. args may be string, []byte, any integer or float type, bool (true → "1",
// false → "0") or anything else go-redis can encode; they reach Lua as strings.
// Run never panics: a failing script gives Result.Err.
func (s *Server) Run(sc *Script, keys []string, args ...any) *Result {
	return s.run(sc, keys, args, false, nil)
}

// RunReadOnly is Run as EVAL_RO and EVALSHA_RO run a script: its write
// commands are refused ("Write commands are not allowed from read-only
// scripts."), and a script with a shebang but without the no-writes flag is
// not run at all, as in Redis 7.0.
func (s *Server) RunReadOnly(sc *Script, keys []string, args ...any) *Result {
	if sc != nil && sc.info.Shebang && !sc.ReadOnly() {
		return &Result{TTLs: map[string]time.Duration{}, file: sc.file,
			Err: &ErrorReply{Msg: "ERR Can not execute a script with write flag using *_ro command."}}
	}
	return s.run(sc, keys, args, true, nil)
}

func (s *Server) run(sc *Script, keys []string, args []any, readOnly bool, spec *specRules) *Result {
	res := &Result{TTLs: map[string]time.Duration{}}
	if sc == nil {
		res.Err = errors.New("luatest: Run of a nil *Script")
		return res
	}
	res.file = sc.file
	if spec != nil {
		res.file = spec.src.Info.File
	}
	argv, err := encodeArgs(args)
	if err != nil {
		res.Err = err
		return res
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := &runState{
		s: s, sc: sc, res: res,
		keys:     map[string]bool{},
		touched:  map[string]bool{},
		written:  map[string]bool{},
		flagged:  map[string]bool{},
		wroteAt:  map[string]int{},
		ttlAt:    map[string]int{},
		now:      s.clock.unixMilli(),
		readOnly: readOnly || sc.ReadOnly(),
		spec:     spec,
	}
	for _, k := range keys {
		r.keys[k] = true
	}
	func() {
		defer func() {
			if p := recover(); p != nil {
				res.Reply = nil
				res.Err = fmt.Errorf("luatest: internal error running %s: %v", sc.file, p)
			}
		}()
		r.execute(keys, argv)
	}()
	r.finish()
	return res
}

// runState is one Run in progress.
type runState struct {
	s        *Server
	sc       *Script
	res      *Result
	keys     map[string]bool // this run's KEYS
	touched  map[string]bool
	written  map[string]bool
	flagged  map[string]bool // violations already reported
	now      int64           // Unix ms; Redis freezes time for a script's key expiry
	readOnly bool
	vm       *luaVM
	// spec: the checks of the spec the script is declared in (ScripterFor);
	// nil: the harness's default rules.
	spec    *specRules
	line    int            // the Lua line of the redis.call running now
	wroteAt map[string]int // the line that first wrote each key
	ttlAt   map[string]int // the line that last gave each key its TTL

	errLocated bool // the error handler found where the error was raised
	errSource  string
	errLine    int
}

func (r *runState) violation(msg string) {
	if !r.flagged[msg] {
		r.flagged[msg] = true
		r.res.Violations = append(r.res.Violations, msg)
	}
}

func (r *runState) touch(key string) {
	if !r.touched[key] {
		r.touched[key] = true
		r.res.Touched = append(r.res.Touched, key)
	}
	if r.spec != nil {
		r.touchSpec(key)
		return
	}
	if !r.keys[key] {
		r.violation(fmt.Sprintf("touched key %q not passed in KEYS", key))
	}
}

func (r *runState) wrote(key string) {
	if !r.written[key] {
		r.written[key] = true
		r.res.Written = append(r.res.Written, key)
		r.wroteAt[key] = r.line
	}
}

func (r *runState) ttl(key string, d time.Duration) {
	r.res.TTLs[key] = d
	r.ttlAt[key] = r.line
}

// exec runs one command for redis.call/pcall, with Redis's script-side checks.
func (r *runState) exec(argv []string) reply {
	name := strings.ToLower(argv[0])
	cmd := Command{Name: name, Args: append([]string(nil), argv[1:]...)}
	if name == "select" {
		r.res.Commands = append(r.res.Commands, cmd)
		r.violation("SELECT called: a script must stay in the database its caller chose")
		return errSelect
	}
	rt, _, ok := r.s.routeFor(argv)
	switch {
	case !ok:
		r.res.Commands = append(r.res.Commands, cmd)
		return errScriptUnknown
	case !rt.arityOK(len(argv)):
		r.res.Commands = append(r.res.Commands, cmd)
		return errScriptArity
	case rt.noscript():
		r.res.Commands = append(r.res.Commands, cmd)
		return errScriptNoScript
	}
	spelled := argv[0]
	argv[0] = name
	keys := rt.keys(argv)
	cmd.Keys = append([]string(nil), keys...)
	r.res.Commands = append(r.res.Commands, cmd)
	for _, k := range cmd.Keys {
		r.touch(k)
	}
	if rt.writes() && r.readOnly {
		return errReadOnlyScript
	}
	if rt.fn == nil {
		return notImplemented(rt)
	}
	return rt.call(&cmdCtx{s: r.s, argv: argv, now: r.now, run: r, keys: keys, name: spelled})
}

func (r *runState) timeout() time.Duration {
	if r.s.ScriptTimeout > 0 {
		return r.s.ScriptTimeout
	}
	return DefaultScriptTimeout
}

// execute runs the script on a pooled (or, with FreshState, a new) Lua state
// and fills Reply or Err.
func (r *runState) execute(keys, argv []string) {
	var vm *luaVM
	if r.s.FreshState {
		vm = newVM()
	} else {
		vm = acquireVM()
	}
	reusable := false
	defer func() {
		if reusable && !r.s.FreshState {
			releaseVM(vm)
		} else {
			vm.close()
		}
	}()
	vm.begin(r, keys, argv)
	// A context of the run's own: coroutines' contexts hang from it, and go
	// when it is cancelled at the end of the run.
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout())
	defer cancel()
	L := vm.L
	L.SetContext(ctx)
	L.Push(vm.mainFunction(r.sc))
	err := L.PCall(0, 1, vm.handler)
	vm.collectCoverage(r.sc)
	vm.overran = ctx.Err() != nil
	r.conclude(L, err, vm.overran)
	reusable = vm.end()
}

// conclude fills Reply or Err from the outcome of the script's PCall.
func (r *runState) conclude(L *lua.LState, err error, overran bool) {
	if overran {
		r.res.Err = fmt.Errorf("luatest: %s ran longer than %v and was stopped", r.sc.file, r.timeout())
		return
	}
	if err != nil {
		var obj lua.LValue = lua.LString(err.Error())
		var aerr *lua.ApiError
		if errors.As(err, &aerr) {
			if aerr.Type == lua.ApiErrorPanic {
				r.res.Err = fmt.Errorf("luatest: gopher-lua failed running %s: %v", r.sc.file, aerr.Object)
				return
			}
			if aerr.Object != nil {
				obj = aerr.Object
			}
		}
		r.res.Err = &ErrorReply{Msg: r.errorText(L, obj)}
		return
	}
	rep := luaToReply(L.Get(-1), 0)
	if e, ok := rep.(errReply); ok {
		r.res.Err = &ErrorReply{Msg: string(e)}
		return
	}
	r.res.Reply = replyToGo(rep)
	r.res.Typed = replyToTyped(rep)
}

// errorHandler is the error handler of a run: like Redis's
// __redis__err__handler it notes where the error was raised.
func (vm *luaVM) errorHandler(L *lua.LState) int {
	r := vm.run
	obj := L.Get(1)
	if source, line, ok := vm.locate(L); ok {
		r.errLocated = true
		r.errSource, r.errLine = source, line
	}
	L.Push(obj)
	return 1
}

// locate is where Redis's __redis__err__handler says an error was raised: the
// function that called the handler, or its caller when that is a C (here Go)
// function.
func (vm *luaVM) locate(L *lua.LState) (source string, line int, ok bool) {
	dbg, ok := L.GetStack(1)
	if !ok {
		return "", 0, false
	}
	if _, err := L.GetInfo("Sl", dbg, lua.LNil); err != nil {
		return "", 0, false
	}
	if dbg.What == "G" {
		if dbg2, ok := L.GetStack(2); ok {
			if _, err := L.GetInfo("Sl", dbg2, lua.LNil); err == nil {
				dbg = dbg2
			}
		}
	}
	source, line = dbg.Source, dbg.CurrentLine
	if src, ok := vm.sources[dbg.Source]; ok {
		source = src
	} else if source == chunkName {
		source = "@" + chunkName
	}
	return source, line, true
}

// luaErrHandler is the global __redis__err__handler a script can call as in
// Redis 7.0: it turns err into an error table ({err='ERR ' .. tostring(err)}
// unless it is a table already) and adds source and line.
func (vm *luaVM) luaErrHandler(L *lua.LState) int {
	err := L.Get(1)
	t, isTable := err.(*lua.LTable)
	if !isTable {
		t = errorTable(L, "ERR "+luaToString(L, err))
	}
	if source, line, ok := vm.locate(L); ok {
		if vm.isProxy(t) {
			L.RaiseError(readonlyMsg)
		}
		t.RawSetString("source", lua.LString(source))
		t.RawSetString("line", lua.LNumber(line))
	}
	L.Push(t)
	return 1
}

var positionRe = regexp.MustCompile(`^([^:\n]*):(\d+): `)

// errorText is the error reply Redis sends for an error raised by the script.
func (r *runState) errorText(L *lua.LState, obj lua.LValue) string {
	var msg string
	if t, ok := obj.(*lua.LTable); ok {
		var ok bool
		if msg, ok = luaStringOrNumber(t.RawGetString("err")); !ok {
			r.violation("the script raised an error object without an err field (Redis 7.0.15 crashes on this)")
			msg = "ERR luatest: the script raised an error object without an err field"
		}
	} else {
		text := luaToString(L, obj)
		msg = "ERR " + lua51Message(text)
		if !r.errLocated {
			// The handler could not run (the call stack was full): the
			// position Lua put in front of the message says where.
			if m := positionRe.FindStringSubmatch(text); m != nil && m[1] == chunkName {
				r.errLocated, r.errSource = true, "@"+chunkName
				r.errLine, _ = strconv.Atoi(m[2])
			}
		}
	}
	if r.errLocated {
		msg += fmt.Sprintf(" script: %s, on %s:%d.", r.sc.sha, r.errSource, r.errLine)
	}
	return mapNewlines(msg)
}

// finish checks the end-of-run rules.
func (r *runState) finish() {
	if r.spec != nil {
		r.finishSpec()
		return
	}
	for _, k := range r.res.Written {
		if o := r.s.db.lookup(k, r.now); o != nil && !o.hasExpire {
			r.violation(fmt.Sprintf("key %q written without a TTL", k))
		}
	}
}
