// Package luascript reads a Lua script the way Redis will before it runs it: the
// shebang line and its flags, the syntax Redis's Lua 5.1 accepts, the Redis commands
// the script calls, the KEYS and ARGV positions it reads, and the globals it uses.
// The generator, the linter and the test harness share this reading.
package luascript

import (
	"bytes"
	"errors"
	"fmt"
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
}

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
	Keys     []int  // KEYS positions (1-based) among its arguments: KEYS[n], or a local set to KEYS[n]
	FirstKey int    // the KEYS position of its first argument after the command, 0 when it is not one
	NArgs    int    // arguments after the command
	// Literals are the arguments after the command, lower-cased when they are
	// string literals and "" otherwise (XADD ... MAXLEN shows as "maxlen").
	Literals []string
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

// Provided are the globals Redis 7 gives a script.
var Provided = map[string]bool{
	"redis": true, "KEYS": true, "ARGV": true, "_G": true, "_VERSION": true,
	"string": true, "table": true, "math": true, "cjson": true, "cmsgpack": true, "bit": true, "struct": true,
	"assert": true, "error": true, "getmetatable": true, "ipairs": true, "next": true, "pairs": true,
	"pcall": true, "rawequal": true, "rawget": true, "rawset": true, "select": true, "setmetatable": true,
	"tonumber": true, "tostring": true, "type": true, "unpack": true, "xpcall": true, "gcinfo": true,
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
	info   *Info
	scopes []map[string]int // local name -> KEYS position it holds (0: anything else)
	err    error            // the first syntax error inside a function expression
}

func (w *walker) push() { w.scopes = append(w.scopes, map[string]int{}) }
func (w *walker) pop()  { w.scopes = w.scopes[:len(w.scopes)-1] }
func (w *walker) declare(n ...string) {
	for _, name := range n {
		w.scopes[len(w.scopes)-1][name] = 0
	}
}

func (w *walker) local(name string) bool {
	for i := len(w.scopes) - 1; i >= 0; i-- {
		if _, ok := w.scopes[i][name]; ok {
			return true
		}
	}
	return false
}

// keyOf is the KEYS position e holds: KEYS[n], or a local set to KEYS[n] and
// never reassigned; 0 otherwise.
func (w *walker) keyOf(e ast.Expr) int {
	switch e := e.(type) {
	case *ast.AttrGetExpr:
		if id, ok := e.Object.(*ast.IdentExpr); ok && id.Value == "KEYS" && !w.local("KEYS") {
			return literalIndex(e.Key)
		}
	case *ast.IdentExpr:
		for i := len(w.scopes) - 1; i >= 0; i-- {
			if n, ok := w.scopes[i][e.Value]; ok {
				return n
			}
		}
	}
	return 0
}

// forget ends a local's KEYS alias when it is assigned again.
func (w *walker) forget(name string) {
	for i := len(w.scopes) - 1; i >= 0; i-- {
		if _, ok := w.scopes[i][name]; ok {
			w.scopes[i][name] = 0
			return
		}
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

func (w *walker) scoped(stmts []ast.Stmt, names ...string) error {
	w.push()
	defer w.pop()
	w.declare(names...)
	return w.block(stmts)
}

func (w *walker) stmt(s ast.Stmt) error {
	switch s := s.(type) {
	case *ast.AssignStmt:
		w.exprs(s.Rhs)
		for _, l := range s.Lhs {
			if id, ok := l.(*ast.IdentExpr); ok {
				if !w.local(id.Value) {
					w.info.Globals = append(w.info.Globals, Global{Line: id.Line(), Name: id.Value, Write: true})
				}
				w.forget(id.Value)
				continue
			}
			w.expr(l)
		}
	case *ast.LocalAssignStmt:
		w.exprs(s.Exprs)
		keys := make([]int, len(s.Names))
		for i := range s.Names {
			if i < len(s.Exprs) {
				keys[i] = w.keyOf(s.Exprs[i])
			}
		}
		w.declare(s.Names...)
		for i, n := range s.Names {
			w.scopes[len(w.scopes)-1][n] = keys[i]
		}
	case *ast.FuncCallStmt:
		w.expr(s.Expr)
	case *ast.DoBlockStmt:
		return w.scoped(s.Stmts)
	case *ast.WhileStmt:
		w.expr(s.Condition)
		return w.scoped(s.Stmts)
	case *ast.RepeatStmt:
		w.push()
		defer w.pop()
		if err := w.block(s.Stmts); err != nil {
			return err
		}
		w.expr(s.Condition)
	case *ast.IfStmt:
		w.expr(s.Condition)
		if err := w.scoped(s.Then); err != nil {
			return err
		}
		return w.scoped(s.Else)
	case *ast.NumberForStmt:
		w.expr(s.Init)
		w.expr(s.Limit)
		if s.Step != nil {
			w.expr(s.Step)
		}
		return w.scoped(s.Stmts, s.Name)
	case *ast.GenericForStmt:
		w.exprs(s.Exprs)
		return w.scoped(s.Stmts, s.Names...)
	case *ast.FuncDefStmt:
		if id, ok := s.Name.Func.(*ast.IdentExpr); ok && s.Name.Receiver == nil {
			if !w.local(id.Value) {
				w.info.Globals = append(w.info.Globals, Global{Line: id.Line(), Name: id.Value, Write: true})
			}
		} else if s.Name.Receiver != nil {
			w.expr(s.Name.Receiver)
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
		w.declare("self")
	}
	if f.ParList != nil {
		w.declare(f.ParList.Names...)
	}
	return w.block(f.Stmts)
}

func (w *walker) exprs(es []ast.Expr) {
	for _, e := range es {
		w.expr(e)
	}
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
			case "ARGV":
				w.info.Argv = append(w.info.Argv, Ref{Line: e.Line(), Index: literalIndex(e.Key)})
			case "redis":
				if s, ok := e.Key.(*ast.StringExpr); ok && (s.Value == "call" || s.Value == "pcall") {
					// redis.call used other than as a direct call: the command cannot be read.
					w.info.Calls = append(w.info.Calls, Call{Line: e.Line(), Fn: s.Value})
					return
				}
				if s, ok := e.Key.(*ast.StringExpr); ok && redisFields[s.Value] {
					return
				}
			}
		}
		w.expr(e.Object)
		w.expr(e.Key)
	case *ast.FuncCallExpr:
		if fn, ok := redisCall(e); ok && !w.local("redis") {
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
			for i, a := range e.Args {
				if k := w.keyOf(a); k > 0 {
					c.Keys = append(c.Keys, k)
					if i == 1 {
						c.FirstKey = k
					}
				}
			}
			w.info.Calls = append(w.info.Calls, c)
			w.exprs(e.Args)
			return
		}
		if code, line, ok := errorReply(e); ok && !w.local("redis") {
			w.info.Errors = append(w.info.Errors, Ref{Line: line, Code: code})
		}
		if e.Func != nil {
			w.expr(e.Func)
		}
		if e.Receiver != nil {
			w.expr(e.Receiver)
		}
		w.exprs(e.Args)
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
		w.expr(e.Expr)
	case *ast.FunctionExpr:
		if err := w.function(e, false); err != nil && w.err == nil {
			w.err = err
		}
	}
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
