package luascript

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/yuin/gopher-lua/ast"
)

// opaque are globals Redis provides through which code the reading cannot see runs.
var opaque = map[string]bool{"loadstring": true, "load": true, "_G": true, "rawget": true, "rawset": true, "getfenv": true, "setfenv": true}

// syntax is the reading of every line of the script, whether or not it runs:
// Lua 5.2 syntax, names that hide redis, KEYS or ARGV, writes into them, globals,
// the opaque functions, every KEYS[...] and ARGV[...] read, error replies and
// string literals. What the script's calls do with their arguments is the flow
// analysis's (flow.go).
type syntax struct {
	info   *Info
	scopes []map[string]bool
	err    error // the first syntax error
}

func (w *syntax) push() { w.scopes = append(w.scopes, map[string]bool{}) }
func (w *syntax) pop()  { w.scopes = w.scopes[:len(w.scopes)-1] }

var shadowed = map[string]bool{"redis": true, "KEYS": true, "ARGV": true}

// declare opens new locals in the innermost scope; a name that would hide the
// global redis, KEYS or ARGV is refused.
func (w *syntax) declare(line int, names ...string) {
	for _, name := range names {
		if shadowed[name] {
			w.unsafe(line, UnsafeShadow, fmt.Sprintf("a local or parameter named %s hides the global %s, and the reading of calls, keys and arguments rests on it: rename it", name, name))
		}
		w.scopes[len(w.scopes)-1][name] = true
	}
}

func (w *syntax) local(name string) bool {
	for i := len(w.scopes) - 1; i >= 0; i-- {
		if w.scopes[i][name] {
			return true
		}
	}
	return false
}

func (w *syntax) unsafe(line int, rule, msg string) {
	w.info.Unsafe = append(w.info.Unsafe, Unsafe{Line: line, Rule: rule, Msg: msg})
}

func (w *syntax) dynamic(line int, what string) {
	w.info.Dynamic = append(w.info.Dynamic, Dynamic{Line: line, What: what})
}

// global reports whether e is the global name (not hidden by a local).
func (w *syntax) global(e ast.Expr, name string) bool {
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

func (w *syntax) fail(line int, msg string) {
	if w.err == nil {
		w.err = &SyntaxError{File: w.info.File, Line: line, Msg: msg}
	}
}

func (w *syntax) block(stmts []ast.Stmt) {
	for _, s := range stmts {
		w.stmt(s)
	}
}

func (w *syntax) scoped(stmts []ast.Stmt, line int, names ...string) {
	w.push()
	defer w.pop()
	w.declare(line, names...)
	w.block(stmts)
}

// assignTarget reads the left side of an assignment.
func (w *syntax) assignTarget(l ast.Expr) {
	if id, ok := l.(*ast.IdentExpr); ok {
		if w.local(id.Value) {
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
		w.indexes(l)
		return
	case w.global(root(l), "ARGV"):
		w.unsafe(l.Line(), UnsafeArgvWrite, "assigns into ARGV: ARGV is read-only (the arguments the caller passed, which the wrapper checked); keep derived values in a local")
		w.indexes(l)
		return
	case w.global(root(l), "redis"):
		w.unsafe(l.Line(), UnsafeShadow, "assigns into the redis table: redis.call and its fields are Redis's; define a local function instead")
		return
	}
	w.expr(l)
}

// indexes walks the index expressions of a chain rooted at KEYS or ARGV.
func (w *syntax) indexes(e ast.Expr) {
	for {
		ag, ok := e.(*ast.AttrGetExpr)
		if !ok {
			return
		}
		w.expr(ag.Key)
		e = ag.Object
	}
}

func (w *syntax) stmt(s ast.Stmt) {
	switch s := s.(type) {
	case *ast.AssignStmt:
		w.exprs(s.Rhs)
		for _, l := range s.Lhs {
			w.assignTarget(l)
		}
	case *ast.LocalAssignStmt:
		if localFunction(s) {
			w.declare(s.Line(), s.Names...)
			w.exprs(s.Exprs)
			return
		}
		w.exprs(s.Exprs)
		w.declare(s.Line(), s.Names...)
	case *ast.FuncCallStmt:
		w.expr(s.Expr)
	case *ast.DoBlockStmt:
		w.scoped(s.Stmts, s.Line())
	case *ast.WhileStmt:
		w.expr(s.Condition)
		w.scoped(s.Stmts, s.Line())
	case *ast.RepeatStmt:
		w.push()
		w.block(s.Stmts)
		w.expr(s.Condition)
		w.pop()
	case *ast.IfStmt:
		w.expr(s.Condition)
		w.scoped(s.Then, s.Line())
		w.scoped(s.Else, s.Line())
	case *ast.NumberForStmt:
		w.expr(s.Init)
		w.expr(s.Limit)
		if s.Step != nil {
			w.expr(s.Step)
		}
		w.scoped(s.Stmts, s.Line(), s.Name)
	case *ast.GenericForStmt:
		w.exprs(s.Exprs)
		w.scoped(s.Stmts, s.Line(), s.Names...)
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
			case w.global(root(s.Name.Receiver), "ARGV"):
				w.unsafe(s.Line(), UnsafeArgvWrite, "defines a method on ARGV: ARGV is read-only; define a local function instead")
			case w.global(root(s.Name.Receiver), "redis"):
				w.unsafe(s.Line(), UnsafeShadow, "defines a method on the redis table: define a local function instead")
			default:
				w.expr(s.Name.Receiver)
			}
		}
		w.function(s.Func, s.Name.Method != "")
	case *ast.ReturnStmt:
		w.exprs(s.Exprs)
	case *ast.BreakStmt:
	case *ast.GotoStmt:
		w.fail(s.Line(), "goto is Lua 5.2; Redis runs Lua 5.1, which rejects it")
	case *ast.LabelStmt:
		w.fail(s.Line(), "labels (::name::) are Lua 5.2; Redis runs Lua 5.1, which rejects them")
	}
}

// localFunction reports whether s is local function f() ... end (or local f =
// function ... end, which gopher-lua compiles alike): f is visible in its body.
func localFunction(s *ast.LocalAssignStmt) bool {
	if len(s.Names) != 1 || len(s.Exprs) != 1 {
		return false
	}
	_, ok := s.Exprs[0].(*ast.FunctionExpr)
	return ok
}

func (w *syntax) function(f *ast.FunctionExpr, method bool) {
	w.push()
	defer w.pop()
	if method {
		w.declare(f.Line(), "self")
	}
	if f.ParList != nil {
		w.declare(f.Line(), f.ParList.Names...)
	}
	w.block(f.Stmts)
}

func (w *syntax) exprs(es []ast.Expr) {
	for _, e := range es {
		w.expr(e)
	}
}

// keysReaders are the functions that only read a table passed to them, so KEYS
// (and ARGV) itself may be passed: ipairs(KEYS), unpack(KEYS), #KEYS is not a call.
var keysReaders = map[string]bool{
	"ipairs": true, "pairs": true, "unpack": true, "next": true, "type": true, "tostring": true, "select": true,
	"table.concat": true, "table.getn": true, "table.maxn": true, "cjson.encode": true, "cmsgpack.pack": true,
}

// funcName is "f" or "lib.f" for a call of a global function or a field of a
// global library table; "" otherwise.
func (w *syntax) funcName(e *ast.FuncCallExpr) string {
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

func (w *syntax) expr(e ast.Expr) {
	switch e := e.(type) {
	case *ast.StringExpr:
		w.info.Strings = append(w.info.Strings, Literal{Line: e.Line(), Text: e.Value})
	case *ast.IdentExpr:
		switch {
		case w.local(e.Value):
		case e.Value == "redis":
			// Reached only when redis is used as a value (aliased, passed, indexed
			// dynamically): redis.call and its known fields return before.
			w.dynamic(e.Line(), "redis used as a value")
		case e.Value == "KEYS":
			// Reached only when KEYS is used as a value: KEYS[i], #KEYS and the
			// reading functions return before.
			w.unsafe(e.Line(), UnsafeKeysWrite, "KEYS used as a value (aliased, stored or returned): whatever holds the table can change it, and KEYS is read-only; read KEYS[n]")
		case e.Value == "ARGV":
			// ARGV as a value (local args = ARGV): the flow analysis follows it,
			// and a write through it is refused there.
			w.info.Argv = append(w.info.Argv, Ref{Line: e.Line()})
		case opaque[e.Value]:
			w.dynamic(e.Line(), e.Value)
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
				w.expr(e.Key)
				return
			case "redis":
				s, ok := e.Key.(*ast.StringExpr)
				switch {
				case ok && (s.Value == "call" || s.Value == "pcall"):
					return // the flow analysis follows redis.call and its aliases
				case ok && s.Value == "set_repl":
					w.unsafe(e.Line(), UnsafeReplication, "redis.set_repl: a script that stops replicating its writes leaves replicas and the AOF different from the primary; remove it (Redis 7 replicates every write a script makes)")
					return
				case ok && redisFields[s.Value]:
					return
				}
			}
		}
		w.expr(e.Object)
		w.expr(e.Key)
	case *ast.FuncCallExpr:
		if code, line, ok := errorReply(e); ok && !w.local("redis") {
			w.info.Errors = append(w.info.Errors, Ref{Line: line, Code: code})
		}
		if e.Func != nil {
			w.expr(e.Func)
		}
		if e.Receiver != nil {
			switch {
			case w.global(e.Receiver, "KEYS"):
				w.unsafe(e.Line(), UnsafeKeysWrite, fmt.Sprintf("calls KEYS:%s(...), which may change KEYS: KEYS is read-only", e.Method))
			case w.global(e.Receiver, "ARGV"):
				w.unsafe(e.Line(), UnsafeArgvWrite, fmt.Sprintf("calls ARGV:%s(...), which may change ARGV: ARGV is read-only", e.Method))
			default:
				w.expr(e.Receiver)
			}
		}
		name := w.funcName(e)
		for _, a := range e.Args {
			table := ""
			switch {
			case w.global(a, "KEYS"):
				table = "KEYS"
			case w.global(a, "ARGV"):
				table = "ARGV"
			}
			if table == "" {
				w.expr(a)
				continue
			}
			refs := &w.info.Keys
			rule := UnsafeKeysWrite
			if table == "ARGV" {
				refs, rule = &w.info.Argv, UnsafeArgvWrite
			}
			*refs = append(*refs, Ref{Line: a.Line()}) // every position may be read
			if _, isRedis := redisCall(e); isRedis && !w.local("redis") {
				if table == "KEYS" {
					w.unsafe(a.Line(), rule, "passes the KEYS table to redis.call: Redis takes strings and numbers; pass KEYS[n]")
				}
				continue
			}
			if !keysReaders[name] {
				what := "a function"
				if name != "" {
					what = name
				}
				w.unsafe(a.Line(), rule, fmt.Sprintf("passes %s to %s, which may change it: %s is read-only; pass %s[n], or copy what you need into a local table", table, what, table, table))
			}
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
		switch {
		case w.global(e.Expr, "KEYS"):
		case w.global(e.Expr, "ARGV"):
		default:
			w.expr(e.Expr)
		}
	case *ast.FunctionExpr:
		w.function(e, false)
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
