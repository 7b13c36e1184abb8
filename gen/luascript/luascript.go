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
	Shebang bool     // the script starts with "#!lua"
	Flags   []string // shebang flags, e.g. no-writes
	Calls   []Call   // every redis.call / redis.pcall, in source order
	Keys    []Ref    // every KEYS[...] read
	Argv    []Ref    // every ARGV[...] read
	Globals []Global // every global name read or written that Redis does not provide
}

// Call is one redis.call or redis.pcall.
type Call struct {
	Line    int
	Fn      string // "call" or "pcall"
	Command string // lower-cased command name; "" when not a string literal
	Keys    []int  // KEYS positions (1-based) among its literal arguments
}

// Ref is one KEYS[i] or ARGV[i] read; Index is 0 when i is not a number literal.
type Ref struct {
	Line  int
	Index int
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
	"loadstring": true,
}

type walker struct {
	info   *Info
	scopes []map[string]bool
	err    error // the first syntax error inside a function expression
}

func (w *walker) push() { w.scopes = append(w.scopes, map[string]bool{}) }
func (w *walker) pop()  { w.scopes = w.scopes[:len(w.scopes)-1] }
func (w *walker) declare(n ...string) {
	for _, name := range n {
		w.scopes[len(w.scopes)-1][name] = true
	}
}

func (w *walker) local(name string) bool {
	for i := len(w.scopes) - 1; i >= 0; i-- {
		if w.scopes[i][name] {
			return true
		}
	}
	return false
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
				continue
			}
			w.expr(l)
		}
	case *ast.LocalAssignStmt:
		w.exprs(s.Exprs)
		w.declare(s.Names...)
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
		if !w.local(e.Value) && !Provided[e.Value] {
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
			}
			for _, a := range e.Args {
				if ae, ok := a.(*ast.AttrGetExpr); ok {
					if id, ok := ae.Object.(*ast.IdentExpr); ok && id.Value == "KEYS" {
						if i := literalIndex(ae.Key); i > 0 {
							c.Keys = append(c.Keys, i)
						}
					}
				}
			}
			w.info.Calls = append(w.info.Calls, c)
			w.exprs(e.Args)
			return
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
