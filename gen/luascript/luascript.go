// Package luascript reads a Lua script the way Redis will before it runs it: the
// shebang line and its flags, the syntax Redis's Lua 5.1 accepts, the Redis commands
// the script calls, the KEYS and ARGV positions it reads, and the globals it uses.
// The generator, the linter and the test harness share this reading.
package luascript

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/yuin/gopher-lua/ast"
	"github.com/yuin/gopher-lua/parse"
)

// ErrSyntax is what a script Redis would refuse to load matches with errors.Is.
var ErrSyntax = errors.New("lua syntax error")

// SyntaxError is a script Redis would refuse to load.
type SyntaxError struct {
	File string
	Line int
	Msg  string
}

func (e *SyntaxError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// Is makes a SyntaxError match ErrSyntax.
func (e *SyntaxError) Is(target error) bool { return target == ErrSyntax }

// Info is what a static reading of one script finds.
type Info struct {
	File    string
	Shebang bool      // the script starts with "#!lua"
	Flags   []string  // shebang flags, e.g. no-writes
	Calls   []Call    // every redis.call / redis.pcall, in source order
	Keys    []Ref     // every KEYS[...] read
	Argv    []Ref     // every ARGV[...] read
	Globals []Global  // every global name read or written that Redis does not provide
	Dynamic []Dynamic // code the static reading cannot follow (redis aliased, loadstring, _G, ...)
	Errors  []Ref     // every redis.error_reply('CODE ...') literal; Code holds its first word
	// Unsafe are uses that would undo what the reading rests on: KEYS written
	// or handed to code that may change it, redis/KEYS/ARGV shadowed or
	// assigned, replication switched off.
	Unsafe []Unsafe
}

// Unsafe is one use of the script that would undo the reading's guarantees.
type Unsafe struct {
	Line int
	Rule string // UnsafeKeysWrite, UnsafeShadow or UnsafeReplication
	Msg  string // what it is and what to do instead
}

// The kinds of Unsafe.
const (
	UnsafeKeysWrite   = "keys-read-only" // KEYS assigned, or passed where it may be changed
	UnsafeShadow      = "shadow"         // a local, parameter or assignment replacing redis, KEYS or ARGV
	UnsafeReplication = "replication"    // redis.set_repl / redis.replicate_commands
)

// Dynamic is a use the static reading cannot follow, which could call any
// command on any key: redis used other than as redis.call(...), redis.pcall(...)
// or one of its known fields, loadstring/load, _G, rawget/rawset.
type Dynamic struct {
	Line int
	What string
}

// Call is one redis.call or redis.pcall.
type Call struct {
	Line     int
	Fn       string // "call" or "pcall"
	Command  string // lower-cased command name; "" when not a string literal
	Keys     []int  // KEYS positions (1-based) among its arguments: KEYS[n], or a local alias of KEYS[n]
	FirstKey int    // the KEYS position of its first argument after the command, 0 when it is not one
	NArgs    int    // arguments after the command
	// Args are all its arguments, the command's name first, as the reading sees them.
	Args []Arg
	// Literals are the arguments after the command, lower-cased when they are
	// string literals and "" otherwise (XADD ... MAXLEN shows as "maxlen").
	Literals []string
}

// ArgKind is what the static reading knows of one argument of redis.call.
type ArgKind int

// The kinds of argument.
const (
	ArgOther   ArgKind = iota // a value the reading does not know
	ArgString                 // a string literal: Text
	ArgInteger                // an integer literal: Text, in decimal as Redis receives it
	ArgNumber                 // a number whose value is not known (arithmetic, tonumber, #t): never a keyword
	ArgKey                    // KEYS[Key] (Key 0: an index that is not a literal), directly or through a local alias never reassigned
	ArgArgv                   // ARGV[Argv] (Argv 0: an index that is not a literal)
	ArgSpread                 // the last argument, expanding to any number of values: unpack(t), f(...), ...
)

// Arg is one argument of a redis.call.
type Arg struct {
	Kind ArgKind
	Text string // ArgString, ArgInteger
	Key  int    // ArgKey
	Argv int    // ArgArgv
	Desc string // how messages name it: "ARGV[1]", "'han:x'", "local k (reassigned at line 7)", "an expression"
}

// Ref is one KEYS[i] or ARGV[i] read (Index is 0 when i is not a number literal),
// or one error_reply code (Code).
type Ref struct {
	Line  int
	Index int
	Code  string
}

// Global is a global variable a script uses that Redis does not provide. Redis 7
// refuses to create globals and errors on reading unknown ones.
type Global struct {
	Line  int
	Name  string
	Write bool
}

// HasFlag reports whether the shebang declares flag.
func (in *Info) HasFlag(flag string) bool {
	for _, f := range in.Flags {
		if f == flag {
			return true
		}
	}
	return false
}

// Commands lists the distinct commands the script calls by literal name, sorted.
func (in *Info) Commands() []string {
	seen := map[string]bool{}
	var out []string
	for _, c := range in.Calls {
		if c.Command != "" && !seen[c.Command] {
			seen[c.Command] = true
			out = append(out, c.Command)
		}
	}
	sort.Strings(out)
	return out
}

// MaxKey is the highest KEYS position read by literal index.
func (in *Info) MaxKey() int { return maxIndex(in.Keys) }

// MaxArg is the highest ARGV position read by literal index.
func (in *Info) MaxArg() int { return maxIndex(in.Argv) }

func maxIndex(refs []Ref) int {
	m := 0
	for _, r := range refs {
		m = max(m, r.Index)
	}
	return m
}

var shebangRe = regexp.MustCompile(`^#!lua(?:\s+(.*))?$`)

// Body returns the source Lua itself parses: the shebang line, which Redis strips
// before compiling, becomes an empty line so line numbers stay the same.
func Body(src []byte) []byte {
	if !bytes.HasPrefix(src, []byte("#!")) {
		return src
	}
	if i := bytes.IndexByte(src, '\n'); i >= 0 {
		return src[i:]
	}
	return nil
}

// Analyze reads one script. file names it in errors ("vm1/rate_limit_sliding.lua").
func Analyze(file string, src []byte) (*Info, error) {
	info := &Info{File: file}
	if bytes.HasPrefix(src, []byte("#!")) {
		first, _, _ := bytes.Cut(src, []byte("\n"))
		m := shebangRe.FindSubmatch(bytes.TrimRight(first, "\r"))
		if m == nil {
			return nil, &SyntaxError{File: file, Line: 1, Msg: "shebang must be #!lua [flags=...] (Redis knows no other engine)"}
		}
		info.Shebang = true
		for _, opt := range strings.Fields(string(m[1])) {
			flags, ok := strings.CutPrefix(opt, "flags=")
			if !ok {
				return nil, &SyntaxError{File: file, Line: 1, Msg: fmt.Sprintf("shebang option %q: Redis knows only flags=", opt)}
			}
			for _, f := range strings.Split(flags, ",") {
				if !knownFlags[f] {
					return nil, &SyntaxError{File: file, Line: 1, Msg: fmt.Sprintf("shebang flag %q: Redis knows no-writes, allow-oom, allow-stale, no-cluster, allow-cross-slot-keys", f)}
				}
				info.Flags = append(info.Flags, f)
			}
		}
	}
	chunk, err := parse.Parse(bytes.NewReader(Body(src)), file)
	if err != nil {
		return nil, syntaxError(file, err, bytes.Count(src, []byte("\n"))+1)
	}
	w := &walker{info: info}
	w.push()
	if err := w.block(chunk); err != nil {
		return nil, err
	}
	if w.err != nil {
		return nil, w.err
	}
	w.resolveCalls()
	return info, nil
}

var knownFlags = map[string]bool{"no-writes": true, "allow-oom": true, "allow-stale": true, "no-cluster": true, "allow-cross-slot-keys": true}

var parseLineRe = regexp.MustCompile(`line:(\d+)\(column:\d+\)`)

func syntaxError(file string, err error, lastLine int) error {
	msg := err.Error()
	e := &SyntaxError{File: file, Msg: strings.TrimSpace(msg)}
	if m := parseLineRe.FindStringSubmatch(msg); m != nil {
		e.Line, _ = strconv.Atoi(m[1])
	} else if strings.Contains(msg, "at EOF") {
		e.Line = lastLine
	}
	if i := strings.LastIndex(e.Msg, "\n"); i >= 0 {
		e.Msg = strings.TrimSpace(e.Msg[i+1:])
	}
	e.Msg = strings.TrimPrefix(e.Msg, file+" ")
	return e
}

// Provided are the globals Redis 7 gives a script (pairs(_G) in a script on
// Redis 7.0.15, less its error handler).
var Provided = map[string]bool{
	"redis": true, "KEYS": true, "ARGV": true, "_G": true, "_VERSION": true,
	"string": true, "table": true, "math": true, "cjson": true, "cmsgpack": true, "bit": true, "struct": true,
	"assert": true, "error": true, "getmetatable": true, "ipairs": true, "next": true, "pairs": true,
	"pcall": true, "rawequal": true, "rawget": true, "rawset": true, "select": true, "setmetatable": true,
	"tonumber": true, "tostring": true, "type": true, "unpack": true, "xpcall": true, "gcinfo": true,
	"coroutine": true, "collectgarbage": true,
}

// redisFields are the fields of the redis table a script may use as values.
var redisFields = map[string]bool{
	"error_reply": true, "status_reply": true, "sha1hex": true, "log": true, "setresp": true, "set_repl": true,
	"replicate_commands": true, "breakpoint": true, "debug": true, "acl_check_cmd": true,
	"LOG_DEBUG": true, "LOG_VERBOSE": true, "LOG_NOTICE": true, "LOG_WARNING": true,
	"REPL_ALL": true, "REPL_AOF": true, "REPL_REPLICA": true, "REPL_SLAVE": true, "REPL_NONE": true,
	"REDIS_VERSION": true, "REDIS_VERSION_NUM": true,
}

// opaque are globals Redis provides through which code the reading cannot see runs.
var opaque = map[string]bool{"loadstring": true, "load": true, "_G": true, "rawget": true, "rawset": true, "getfenv": true, "setfenv": true}

type walker struct {
	info    *Info
	scopes  []map[string]*binding
	pending []pending // call arguments that are locals, resolved once every assignment is seen
	err     error     // the first syntax error inside a function expression
}

// binding is one declaration of a local variable or parameter.
type binding struct {
	name     string
	key      int        // initialised with KEYS[key]; -1: KEYS[i] with i not a literal; 0: anything else
	from     *binding   // initialised with another local's value
	assigned int        // the first line assigning it again anywhere in its scope (loops and closures too); 0: never
	number   bool       // initialised with a number (a literal, arithmetic, tonumber(...), ...) ...
	numDeps  []*binding // ... provided these locals hold numbers too
}

type pending struct {
	call, arg int
	b         *binding
}

func (w *walker) push() { w.scopes = append(w.scopes, map[string]*binding{}) }
func (w *walker) pop()  { w.scopes = w.scopes[:len(w.scopes)-1] }

// declare opens new locals in the innermost scope; a name that would hide the
// global redis, KEYS or ARGV is refused.
func (w *walker) declare(line int, names ...string) []*binding {
	out := make([]*binding, len(names))
	for i, name := range names {
		if shadowed[name] {
			w.unsafe(line, UnsafeShadow, fmt.Sprintf("a local or parameter named %s hides the global %s, and the reading of calls, keys and arguments rests on it: rename it", name, name))
		}
		b := &binding{name: name}
		w.scopes[len(w.scopes)-1][name] = b
		out[i] = b
	}
	return out
}

var shadowed = map[string]bool{"redis": true, "KEYS": true, "ARGV": true}

func (w *walker) lookup(name string) *binding {
	for i := len(w.scopes) - 1; i >= 0; i-- {
		if b, ok := w.scopes[i][name]; ok {
			return b
		}
	}
	return nil
}

func (w *walker) local(name string) bool { return w.lookup(name) != nil }

func (w *walker) unsafe(line int, rule, msg string) {
	w.info.Unsafe = append(w.info.Unsafe, Unsafe{Line: line, Rule: rule, Msg: msg})
}

// global reports whether e is the global name (not hidden by a local).
func (w *walker) global(e ast.Expr, name string) bool {
	id, ok := e.(*ast.IdentExpr)
	return ok && id.Value == name && !w.local(name)
}

// root is the variable at the base of an index chain: t for t[1].x.
func root(e ast.Expr) ast.Expr {
	for {
		ag, ok := e.(*ast.AttrGetExpr)
		if !ok {
			return e
		}
		e = ag.Object
	}
}

func (w *walker) block(stmts []ast.Stmt) error {
	for _, s := range stmts {
		if err := w.stmt(s); err != nil {
			return err
		}
	}
	return nil
}

func (w *walker) scoped(stmts []ast.Stmt, line int, names ...string) error {
	w.push()
	defer w.pop()
	w.declare(line, names...)
	return w.block(stmts)
}

// assignTarget reads the left side of an assignment.
func (w *walker) assignTarget(l ast.Expr) {
	if id, ok := l.(*ast.IdentExpr); ok {
		if b := w.lookup(id.Value); b != nil {
			if b.assigned == 0 {
				b.assigned = id.Line()
			}
			return
		}
		if shadowed[id.Value] {
			w.unsafe(id.Line(), UnsafeShadow, fmt.Sprintf("assigns the global %s, which Redis provides and the reading rests on: use a local of another name", id.Value))
			return
		}
		w.info.Globals = append(w.info.Globals, Global{Line: id.Line(), Name: id.Value, Write: true})
		return
	}
	switch {
	case w.global(root(l), "KEYS"):
		w.unsafe(l.Line(), UnsafeKeysWrite, "assigns into KEYS: KEYS is read-only (the keys the caller passed, which the ACL and the key checks rest on); keep derived values in a local")
		w.keysIndexes(l)
		return
	case w.global(root(l), "redis"):
		w.unsafe(l.Line(), UnsafeShadow, "assigns into the redis table: redis.call and its fields are Redis's; define a local function instead")
		return
	}
	w.expr(l)
}

// keysIndexes walks the index expressions of a chain rooted at KEYS.
func (w *walker) keysIndexes(e ast.Expr) {
	for {
		ag, ok := e.(*ast.AttrGetExpr)
		if !ok {
			return
		}
		w.expr(ag.Key)
		e = ag.Object
	}
}

func (w *walker) stmt(s ast.Stmt) error {
	switch s := s.(type) {
	case *ast.AssignStmt:
		w.exprs(s.Rhs)
		for _, l := range s.Lhs {
			w.assignTarget(l)
		}
	case *ast.LocalAssignStmt:
		w.exprs(s.Exprs)
		keys := make([]int, len(s.Names))
		from := make([]*binding, len(s.Names))
		nums := make([]bool, len(s.Names))
		deps := make([][]*binding, len(s.Names))
		for i := range s.Names {
			if i >= len(s.Exprs) {
				break
			}
			nums[i], deps[i] = w.numeric(s.Exprs[i])
			switch e := s.Exprs[i].(type) {
			case *ast.AttrGetExpr:
				if w.global(e.Object, "KEYS") {
					keys[i] = literalIndex(e.Key)
					if keys[i] == 0 {
						keys[i] = -1
					}
				}
			case *ast.IdentExpr:
				from[i] = w.lookup(e.Value)
			}
		}
		for i, b := range w.declare(s.Line(), s.Names...) {
			b.key, b.from, b.number, b.numDeps = keys[i], from[i], nums[i], deps[i]
		}
	case *ast.FuncCallStmt:
		w.expr(s.Expr)
	case *ast.DoBlockStmt:
		return w.scoped(s.Stmts, s.Line())
	case *ast.WhileStmt:
		w.expr(s.Condition)
		return w.scoped(s.Stmts, s.Line())
	case *ast.RepeatStmt:
		w.push()
		defer w.pop()
		if err := w.block(s.Stmts); err != nil {
			return err
		}
		w.expr(s.Condition)
	case *ast.IfStmt:
		w.expr(s.Condition)
		if err := w.scoped(s.Then, s.Line()); err != nil {
			return err
		}
		return w.scoped(s.Else, s.Line())
	case *ast.NumberForStmt:
		w.expr(s.Init)
		w.expr(s.Limit)
		if s.Step != nil {
			w.expr(s.Step)
		}
		return w.scoped(s.Stmts, s.Line(), s.Name)
	case *ast.GenericForStmt:
		w.exprs(s.Exprs)
		return w.scoped(s.Stmts, s.Line(), s.Names...)
	case *ast.FuncDefStmt:
		switch f := s.Name.Func.(type) {
		case *ast.IdentExpr:
			if s.Name.Receiver == nil {
				w.assignTarget(f)
			}
		case *ast.AttrGetExpr:
			w.assignTarget(f) // function t.f() ... end assigns t.f
		}
		if s.Name.Receiver != nil {
			switch {
			case w.global(root(s.Name.Receiver), "KEYS"):
				w.unsafe(s.Line(), UnsafeKeysWrite, "defines a method on KEYS: KEYS is read-only; define a local function instead")
			case w.global(root(s.Name.Receiver), "redis"):
				w.unsafe(s.Line(), UnsafeShadow, "defines a method on the redis table: define a local function instead")
			default:
				w.expr(s.Name.Receiver)
			}
		}
		return w.function(s.Func, s.Name.Method != "")
	case *ast.ReturnStmt:
		w.exprs(s.Exprs)
	case *ast.BreakStmt:
	case *ast.GotoStmt:
		return &SyntaxError{File: w.info.File, Line: s.Line(), Msg: "goto is Lua 5.2; Redis runs Lua 5.1, which rejects it"}
	case *ast.LabelStmt:
		return &SyntaxError{File: w.info.File, Line: s.Line(), Msg: "labels (::name::) are Lua 5.2; Redis runs Lua 5.1, which rejects them"}
	}
	return nil
}

func (w *walker) function(f *ast.FunctionExpr, method bool) error {
	w.push()
	defer w.pop()
	if method {
		w.declare(f.Line(), "self")
	}
	if f.ParList != nil {
		w.declare(f.Line(), f.ParList.Names...)
	}
	return w.block(f.Stmts)
}

func (w *walker) exprs(es []ast.Expr) {
	for _, e := range es {
		w.expr(e)
	}
}

// keysReaders are the functions that only read a table passed to them, so KEYS
// itself may be passed: ipairs(KEYS), unpack(KEYS), #KEYS is not a call.
var keysReaders = map[string]bool{
	"ipairs": true, "pairs": true, "unpack": true, "next": true, "type": true, "tostring": true,
	"table.concat": true, "table.getn": true, "table.maxn": true, "cjson.encode": true, "cmsgpack.pack": true,
}

// funcName is "f" or "lib.f" for a call of a global function or a field of a
// global library table; "" otherwise.
func (w *walker) funcName(e *ast.FuncCallExpr) string {
	if e.Receiver != nil {
		return ""
	}
	switch f := e.Func.(type) {
	case *ast.IdentExpr:
		if !w.local(f.Value) {
			return f.Value
		}
	case *ast.AttrGetExpr:
		lib, ok := f.Object.(*ast.IdentExpr)
		key, ok2 := f.Key.(*ast.StringExpr)
		if ok && ok2 && !w.local(lib.Value) {
			return lib.Value + "." + key.Value
		}
	}
	return ""
}

func (w *walker) expr(e ast.Expr) {
	switch e := e.(type) {
	case *ast.IdentExpr:
		switch {
		case w.local(e.Value):
		case e.Value == "redis":
			// Reached only when redis is used as a value (aliased, passed, indexed
			// dynamically): redis.call(...) and known fields return before.
			w.info.Dynamic = append(w.info.Dynamic, Dynamic{Line: e.Line(), What: "redis used as a value"})
		case e.Value == "KEYS":
			// Reached only when KEYS is used as a value: KEYS[i], #KEYS and the
			// reading functions return before.
			w.unsafe(e.Line(), UnsafeKeysWrite, "KEYS used as a value (aliased, stored or returned): whatever holds the table can change it, and KEYS is read-only; read KEYS[n]")
		case opaque[e.Value]:
			w.info.Dynamic = append(w.info.Dynamic, Dynamic{Line: e.Line(), What: e.Value})
		case !Provided[e.Value]:
			w.info.Globals = append(w.info.Globals, Global{Line: e.Line(), Name: e.Value})
		}
	case *ast.AttrGetExpr:
		if id, ok := e.Object.(*ast.IdentExpr); ok && !w.local(id.Value) {
			switch id.Value {
			case "KEYS":
				w.info.Keys = append(w.info.Keys, Ref{Line: e.Line(), Index: literalIndex(e.Key)})
				w.expr(e.Key)
				return
			case "ARGV":
				w.info.Argv = append(w.info.Argv, Ref{Line: e.Line(), Index: literalIndex(e.Key)})
			case "redis":
				s, ok := e.Key.(*ast.StringExpr)
				switch {
				case ok && (s.Value == "call" || s.Value == "pcall"):
					// redis.call used other than as a direct call: the command cannot be read.
					w.info.Calls = append(w.info.Calls, Call{Line: e.Line(), Fn: s.Value})
					return
				case ok && s.Value == "set_repl":
					w.unsafe(e.Line(), UnsafeReplication, "redis.set_repl: a script that stops replicating its writes leaves replicas and the AOF different from the primary; remove it (Redis 7 replicates every write a script makes)")
					return
				case ok && s.Value == "replicate_commands":
					w.unsafe(e.Line(), UnsafeReplication, "redis.replicate_commands: Redis 7 always replicates a script's effects and the call does nothing; remove it")
					return
				case ok && redisFields[s.Value]:
					return
				}
			}
		}
		w.expr(e.Object)
		w.expr(e.Key)
	case *ast.FuncCallExpr:
		if fn, ok := redisCall(e); ok && !w.local("redis") {
			w.call(e, fn)
			return
		}
		if code, line, ok := errorReply(e); ok && !w.local("redis") {
			w.info.Errors = append(w.info.Errors, Ref{Line: line, Code: code})
		}
		if e.Func != nil {
			w.expr(e.Func)
		}
		if e.Receiver != nil {
			if w.global(e.Receiver, "KEYS") {
				w.unsafe(e.Line(), UnsafeKeysWrite, fmt.Sprintf("calls KEYS:%s(...), which may change KEYS: KEYS is read-only", e.Method))
			} else {
				w.expr(e.Receiver)
			}
		}
		name := w.funcName(e)
		for _, a := range e.Args {
			if w.global(a, "KEYS") {
				if !keysReaders[name] {
					what := "a function"
					if name != "" {
						what = name
					}
					w.unsafe(a.Line(), UnsafeKeysWrite, fmt.Sprintf("passes KEYS to %s, which may change it: KEYS is read-only; pass KEYS[n], or copy what you need into a local table", what))
				}
				continue
			}
			w.expr(a)
		}
	case *ast.TableExpr:
		for _, f := range e.Fields {
			if f.Key != nil {
				w.expr(f.Key)
			}
			w.expr(f.Value)
		}
	case *ast.LogicalOpExpr:
		w.expr(e.Lhs)
		w.expr(e.Rhs)
	case *ast.RelationalOpExpr:
		w.expr(e.Lhs)
		w.expr(e.Rhs)
	case *ast.StringConcatOpExpr:
		w.expr(e.Lhs)
		w.expr(e.Rhs)
	case *ast.ArithmeticOpExpr:
		w.expr(e.Lhs)
		w.expr(e.Rhs)
	case *ast.UnaryMinusOpExpr:
		w.expr(e.Expr)
	case *ast.UnaryNotOpExpr:
		w.expr(e.Expr)
	case *ast.UnaryLenOpExpr:
		if !w.global(e.Expr, "KEYS") {
			w.expr(e.Expr)
		}
	case *ast.FunctionExpr:
		if err := w.function(e, false); err != nil && w.err == nil {
			w.err = err
		}
	}
}

// call reads one redis.call / redis.pcall.
func (w *walker) call(e *ast.FuncCallExpr, fn string) {
	c := Call{Line: e.Line(), Fn: fn}
	if len(e.Args) > 0 {
		if s, ok := e.Args[0].(*ast.StringExpr); ok {
			c.Command = strings.ToLower(s.Value)
		}
		c.NArgs = len(e.Args) - 1
		for _, a := range e.Args[1:] {
			lit := ""
			if s, ok := a.(*ast.StringExpr); ok {
				lit = strings.ToLower(s.Value)
			}
			c.Literals = append(c.Literals, lit)
		}
	}
	idx := len(w.info.Calls)
	for i, a := range e.Args {
		arg, b := w.arg(a, i == len(e.Args)-1)
		if b != nil {
			w.pending = append(w.pending, pending{call: idx, arg: i, b: b})
		}
		c.Args = append(c.Args, arg)
	}
	w.info.Calls = append(w.info.Calls, c)
	for _, a := range e.Args {
		if w.global(a, "KEYS") {
			w.unsafe(a.Line(), UnsafeKeysWrite, "passes the KEYS table to redis."+fn+": Redis takes strings and numbers; pass KEYS[n]")
			continue
		}
		w.expr(a)
	}
}

// numeric are functions whose one result is a number. This and single rest on
// Redis 7 making the globals and library tables read-only ("Attempt to modify a
// readonly table"), so string.format is Redis's own; a local of such a name is
// not taken for it (funcName).
var numeric = map[string]bool{
	"tonumber": true, "math.floor": true, "math.ceil": true, "math.abs": true, "math.max": true, "math.min": true,
	"math.fmod": true, "math.sqrt": true, "math.pow": true, "math.exp": true, "math.log": true, "math.log10": true,
	"string.len": true, "table.getn": true, "table.maxn": true,
}

// single are functions that return exactly one value that is not a number.
var single = map[string]bool{
	"tostring": true, "type": true, "string.format": true, "string.sub": true, "string.rep": true,
	"string.lower": true, "string.upper": true, "string.reverse": true, "table.concat": true,
	"cjson.encode": true, "cmsgpack.pack": true, "redis.sha1hex": true,
}

// arg is what the reading knows of one argument of a redis.call; a local is
// returned to be resolved once the whole script is read.
func (w *walker) arg(e ast.Expr, last bool) (Arg, *binding) {
	switch e := e.(type) {
	case *ast.StringExpr:
		return Arg{Kind: ArgString, Text: e.Value, Desc: strconv.Quote(e.Value)}, nil
	case *ast.NumberExpr:
		if n, ok := luaInteger(e.Value, false); ok {
			return Arg{Kind: ArgInteger, Text: n, Desc: n}, nil
		}
		return Arg{Kind: ArgNumber, Desc: e.Value}, nil
	case *ast.UnaryMinusOpExpr:
		if num, ok := e.Expr.(*ast.NumberExpr); ok {
			if n, ok := luaInteger(num.Value, true); ok {
				return Arg{Kind: ArgInteger, Text: n, Desc: n}, nil
			}
		}
		return Arg{Kind: ArgNumber, Desc: "a number"}, nil
	case *ast.ArithmeticOpExpr, *ast.UnaryLenOpExpr:
		return Arg{Kind: ArgNumber, Desc: "a number"}, nil
	case *ast.LogicalOpExpr:
		if ok, deps := w.numeric(e); ok {
			b := &binding{number: true, numDeps: deps} // resolved with the locals it reads
			return Arg{Kind: ArgOther, Desc: "an expression"}, b
		}
	case *ast.AttrGetExpr:
		switch {
		case w.global(e.Object, "KEYS"):
			k := literalIndex(e.Key)
			d := "KEYS[...]"
			if k > 0 {
				d = fmt.Sprintf("KEYS[%d]", k)
			}
			return Arg{Kind: ArgKey, Key: k, Desc: d}, nil
		case w.global(e.Object, "ARGV"):
			k := literalIndex(e.Key)
			d := "ARGV[...]"
			if k > 0 {
				d = fmt.Sprintf("ARGV[%d]", k)
			}
			return Arg{Kind: ArgArgv, Argv: k, Desc: d}, nil
		}
	case *ast.IdentExpr:
		if b := w.lookup(e.Value); b != nil {
			return Arg{Kind: ArgOther, Desc: "local " + e.Value}, b
		}
		return Arg{Kind: ArgOther, Desc: "global " + e.Value}, nil
	case *ast.FuncCallExpr:
		name := w.funcName(e)
		switch {
		case numeric[name]:
			return Arg{Kind: ArgNumber, Desc: name + "(...)"}, nil
		case single[name] || e.AdjustRet || !last:
			return Arg{Kind: ArgOther, Desc: "a function's result"}, nil
		}
		if name == "" {
			name = "a function call"
		} else {
			name += "(...)"
		}
		return Arg{Kind: ArgSpread, Desc: name}, nil
	case *ast.Comma3Expr:
		if last && !e.AdjustRet {
			return Arg{Kind: ArgSpread, Desc: "..."}, nil
		}
		return Arg{Kind: ArgOther, Desc: "..."}, nil
	}
	return Arg{Kind: ArgOther, Desc: "an expression"}, nil
}

// luaInteger is the decimal text Redis receives for a Lua number literal that
// is an integer (Redis converts numbers with %.17g); false for any other number.
func luaInteger(lit string, negate bool) (string, bool) {
	var f float64
	if n, err := strconv.ParseInt(lit, 0, 64); err == nil {
		f = float64(n)
	} else if v, err := strconv.ParseFloat(lit, 64); err == nil {
		f = v
	} else {
		return "", false
	}
	if negate {
		f = -f
	}
	if f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return "", false
	}
	return strconv.FormatInt(int64(f), 10), true
}

// numeric reports whether e is certainly a number (or nil, which redis.call
// refuses), never text: a number literal, arithmetic, #t, tonumber(...) and the
// like, a and/or of such, or locals holding one (deps, checked once every
// assignment is seen).
func (w *walker) numeric(e ast.Expr) (bool, []*binding) {
	switch e := e.(type) {
	case *ast.NumberExpr, *ast.ArithmeticOpExpr, *ast.UnaryLenOpExpr, *ast.UnaryMinusOpExpr, *ast.NilExpr:
		return true, nil
	case *ast.FuncCallExpr:
		return numeric[w.funcName(e)], nil
	case *ast.LogicalOpExpr:
		l, ld := w.numeric(e.Lhs)
		r, rd := w.numeric(e.Rhs)
		return l && r, append(ld, rd...)
	case *ast.IdentExpr:
		if b := w.lookup(e.Value); b != nil {
			return true, []*binding{b}
		}
	}
	return false, nil
}

// holdsNumber reports whether a local (or an expression's stand-in) always
// holds a number: initialised with one, never assigned again, and so for every
// local it was computed from.
func holdsNumber(b *binding, depth int) bool {
	if b.assigned > 0 || !b.number || depth > 64 {
		return false
	}
	for _, d := range b.numDeps {
		if !holdsNumber(d, depth+1) {
			return false
		}
	}
	return true
}

// resolveCalls decides, once every assignment of the script is seen, which
// locals passed to redis.call are aliases of KEYS[n] (declared with KEYS[n], or
// another such alias, and never assigned again anywhere in their scope) and
// which always hold numbers.
func (w *walker) resolveCalls() {
	for _, p := range w.pending {
		a := &w.info.Calls[p.call].Args[p.arg]
		if holdsNumber(p.b, 0) {
			a.Kind = ArgNumber
			continue
		}
		k, why := aliasOf(p.b)
		if k != 0 {
			a.Kind, a.Key = ArgKey, max(k, 0)
			continue
		}
		if p.b.name != "" {
			a.Desc += why
		}
	}
	for i := range w.info.Calls {
		c := &w.info.Calls[i]
		for j, a := range c.Args {
			if a.Kind == ArgKey && a.Key > 0 {
				c.Keys = append(c.Keys, a.Key)
				if j == 1 {
					c.FirstKey = a.Key
				}
			}
		}
	}
}

// aliasOf is the KEYS position a local stands for (-1: KEYS[i], i not a
// literal), or 0 and why it stands for none.
func aliasOf(b *binding) (int, string) {
	for seen := 0; b != nil && seen < 64; seen++ {
		if b.assigned > 0 {
			return 0, fmt.Sprintf(" (assigned again at line %d)", b.assigned)
		}
		if b.key != 0 {
			return b.key, ""
		}
		b = b.from
	}
	return 0, " (not set from KEYS[n])"
}

// errorReply reads redis.error_reply('CODE message'): its code, or "" when the
// message is not a string literal.
func errorReply(e *ast.FuncCallExpr) (string, int, bool) {
	ag, ok := e.Func.(*ast.AttrGetExpr)
	if !ok {
		return "", 0, false
	}
	id, ok := ag.Object.(*ast.IdentExpr)
	if !ok || id.Value != "redis" {
		return "", 0, false
	}
	if k, ok := ag.Key.(*ast.StringExpr); !ok || k.Value != "error_reply" {
		return "", 0, false
	}
	if len(e.Args) != 1 {
		return "", e.Line(), true
	}
	msg := e.Args[0]
	for {
		// 'CODE text ' .. detail: the code is in the leftmost literal.
		cat, ok := msg.(*ast.StringConcatOpExpr)
		if !ok {
			break
		}
		msg = cat.Lhs
	}
	if s, ok := msg.(*ast.StringExpr); ok {
		code, _, _ := strings.Cut(strings.TrimPrefix(s.Value, "-"), " ")
		return code, e.Line(), true
	}
	return "", e.Line(), true
}

// redisCall reports whether e is redis.call(...) or redis.pcall(...).
func redisCall(e *ast.FuncCallExpr) (string, bool) {
	ag, ok := e.Func.(*ast.AttrGetExpr)
	if !ok {
		return "", false
	}
	id, ok := ag.Object.(*ast.IdentExpr)
	if !ok || id.Value != "redis" {
		return "", false
	}
	s, ok := ag.Key.(*ast.StringExpr)
	if !ok || (s.Value != "call" && s.Value != "pcall") {
		return "", false
	}
	return s.Value, true
}

func literalIndex(e ast.Expr) int {
	n, ok := e.(*ast.NumberExpr)
	if !ok {
		return 0
	}
	i, err := strconv.Atoi(n.Value)
	if err != nil || i < 1 {
		return 0
	}
	return i
}
