package luascript

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/yuin/gopher-lua/ast"
)

// The flow analysis follows values through the script as Lua would run it:
// every local, upvalue, parameter and table field holds a value (a small set of
// alternatives: literals, KEYS[n], ARGV[n], strings built from them, the
// script's tables and functions, redis.call, library functions, data read from
// Redis); a call of one of the script's functions is followed into its body with
// the arguments of that call site (context-sensitive), and each redis.call it
// reaches is recorded with the values its arguments may have there.
//
// It is flow-insensitive within a context: a variable holds everything ever
// assigned to it, whatever the order, so a loop or a closure that reassigns it
// is accounted for. The whole script is walked again until no variable or table
// gains an alternative; the last walk, which changed nothing, is the reading.
// Whatever the analysis cannot name is an unnamed value, which no key check
// accepts; what it cannot follow at all (a call of an unnamed function, a helper
// calling itself, redis.call handed to library code) is a Dynamic refusal.

const (
	maxDepth    = 24      // nested helper calls followed
	maxContexts = 4096    // distinct helper call chains followed
	maxSteps    = 4000000 // expressions evaluated over all walks
	maxPasses   = 40
	widenAfter  = 6 // changes of one variable before its strings fold into one unnamed value
)

type binding struct {
	name       string
	val        value
	reassigned int // the first line assigning it after its declaration; 0: never
	changes    int
	// decl is what its declarations gave it; contrib what each later
	// statement assigning it did, for reading it without one statement's own
	// part (AssignStmt).
	decl    value
	contrib map[any]value
	read    int // the last walk that read it (1-based)
}

type scope struct {
	names  []string
	vars   []*binding
	parent *scope
	// loop: the body of a loop (its statements may run again); fn: the body
	// of a function (it may run again, with its upvalues as they are then).
	loop, fn bool
}

func (s *scope) lookup(name string) *binding {
	b, _ := s.lookupOnce(name)
	return b
}

// lookupOnce finds name's binding, and whether the code at s runs at most once
// for each time the binding is declared: no loop body and no function body
// lies between them.
func (s *scope) lookupOnce(name string) (*binding, bool) {
	once := true
	for ; s != nil; s = s.parent {
		for i := len(s.names) - 1; i >= 0; i-- {
			if s.names[i] == name {
				return s.vars[i], once
			}
		}
		if s.loop || s.fn {
			once = false
		}
	}
	return nil, false
}

func (s *scope) add(name string, b *binding) {
	s.names = append(s.names, name)
	s.vars = append(s.vars, b)
}

type closure struct {
	fn      *ast.FunctionExpr
	env     *scope
	name    string
	method  bool
	escaped bool
}

type table struct {
	fields  map[string]value
	elems   value // integer and unknown keys
	anyKey  value // written under a key the reading cannot tell: any field may hold it
	meta    value // the metatables set on it (setmetatable): reads it lacks go through their __index
	changes int
	read    int // the last walk that read it (1-based)
}

// spread is a list of values of unknown length, each one of v.
type spread struct {
	v        value
	keysFrom int // exactly KEYS[keysFrom], ..., KEYS[#KEYS]
}

type frame struct {
	ctx       int
	fn        *closure
	line      int
	args      []value
	varargs   []value
	varSpread *spread
	returns   []value
	retSpread *spread
}

type bindKey struct {
	node any
	i    int
	ctx  int
}

type siteKey struct {
	node any
	ctx  int
}

type ctxKey struct {
	parent int
	site   any
	fn     int
}

type analyzer struct {
	info     *Info
	changed  bool
	bindings map[bindKey]*binding
	globals  map[string]*binding
	closures []*closure
	closeIDs map[siteKey]int
	tables   []*table
	tableIDs map[siteKey]int
	ctxIDs   map[ctxKey]int
	// recursive are the contexts of functions called from their own body.
	recursive map[int]*recursive
	stack     []*frame
	steps     int
	pass      int    // the walk under way, from 1
	stopped   string // why the analysis gave up
	// without: while the right side of an assignment run once per declaration
	// is evaluated, the variables it assigns, read without its own part.
	without map[*binding]any

	// What one walk records; the last walk's is the reading.
	calls   []pendingCall
	dynamic []Dynamic
	unsafe  []Unsafe
	seen    map[string]bool
	numeric map[int]int
}

// flow runs the analysis of chunk and records its calls, and what it cannot
// follow, into info.
func flow(info *Info, chunk []ast.Stmt) {
	a := &analyzer{
		info:      info,
		bindings:  map[bindKey]*binding{},
		globals:   map[string]*binding{},
		closeIDs:  map[siteKey]int{},
		tableIDs:  map[siteKey]int{},
		ctxIDs:    map[ctxKey]int{{parent: -1}: 0},
		recursive: map[int]*recursive{},
	}
	var main *frame
	for pass := 0; ; pass++ {
		a.pass = pass + 1
		a.changed = false
		a.calls, a.dynamic, a.unsafe = nil, nil, nil
		a.seen, a.numeric = map[string]bool{}, map[int]int{}
		main = &frame{ctx: 0}
		a.stack = []*frame{main}
		a.block(chunk, &scope{})
		a.runEscaped()
		if a.stopped != "" {
			a.calls = nil
			a.dynamic = append(a.dynamic, Dynamic{Line: 1, What: a.stopped})
			break
		}
		if !a.changed {
			break
		}
		if pass == maxPasses {
			a.calls = nil
			a.dynamic = append(a.dynamic, Dynamic{Line: 1, What: "the values of the script's variables do not settle"})
			break
		}
	}
	for _, p := range a.calls {
		info.Calls = append(info.Calls, a.buildCall(p)...)
	}
	info.Returns = returnKinds(main)
	info.Dynamic = append(info.Dynamic, a.dynamic...)
	for _, u := range a.unsafe {
		dup := false
		for _, v := range info.Unsafe {
			if v.Line == u.Line && v.Rule == u.Rule {
				dup = true // the syntax reading said it already
			}
		}
		if !dup {
			info.Unsafe = append(info.Unsafe, u)
		}
	}
	for n, line := range a.numeric {
		info.Numeric = append(info.Numeric, Ref{Line: line, Index: n})
	}
	sort.Slice(info.Numeric, func(i, j int) bool { return info.Numeric[i].Index < info.Numeric[j].Index })
	sort.SliceStable(info.Dynamic, func(i, j int) bool { return info.Dynamic[i].Line < info.Dynamic[j].Line })
	sort.SliceStable(info.Unsafe, func(i, j int) bool { return info.Unsafe[i].Line < info.Unsafe[j].Line })
}

// runEscaped walks, with arguments that may be anything, every function of the
// script that was handed to code the analysis does not follow (a metatable, a
// comparator, a coroutine), until no more escape.
func (a *analyzer) runEscaped() {
	for done := map[int]bool{}; ; {
		more := false
		for id, c := range a.closures {
			if !c.escaped || done[id] || c.env == nil {
				continue
			}
			done[id], more = true, true
			n := len(c.fn.ParList.Names) + 1
			args := make([]value, n)
			for i := range args {
				args[i] = one(anyAlt("an argument passed by code the reading does not follow"))
			}
			saved := a.stack
			a.stack = []*frame{{ctx: 0}}
			a.callClosure(id, c, args, &spread{v: one(anyAlt("an argument passed by code the reading does not follow"))}, nil, c.fn.Line(), true)
			a.stack = saved
		}
		if !more {
			return
		}
	}
}

func (a *analyzer) top() *frame { return a.stack[len(a.stack)-1] }

func (a *analyzer) refuse(line int, what string) {
	k := "d" + strconv.Itoa(line) + what
	if !a.seen[k] {
		a.seen[k] = true
		a.dynamic = append(a.dynamic, Dynamic{Line: line, What: what})
	}
}

func (a *analyzer) unsafeUse(line int, rule, msg string) {
	k := "u" + strconv.Itoa(line) + msg
	if !a.seen[k] {
		a.seen[k] = true
		a.unsafe = append(a.unsafe, Unsafe{Line: line, Rule: rule, Msg: msg})
	}
}

func (a *analyzer) step() bool {
	a.steps++
	if a.steps > maxSteps && a.stopped == "" {
		a.stopped = "the script is too large or branches too much for the reading to follow"
	}
	return a.stopped == ""
}

// binding is the variable declared by node (its i-th name) in the current context.
func (a *analyzer) binding(node any, i int, name string) *binding {
	return a.bindingIn(a.top().ctx, node, i, name)
}

// bindingIn is the variable declared by node (its i-th name) in context ctx.
func (a *analyzer) bindingIn(ctx int, node any, i int, name string) *binding {
	k := bindKey{node: node, i: i, ctx: ctx}
	b := a.bindings[k]
	if b == nil {
		b = &binding{name: name}
		a.bindings[k] = b
	}
	return b
}

// assign joins v into b: a variable holds every value ever assigned to it.
func (a *analyzer) assign(b *binding, v value, line int, decl bool) {
	if !decl && b.reassigned == 0 {
		b.reassigned = line
	}
	nv, grew := join(b.val, v)
	if !grew {
		return
	}
	b.changes++
	if b.changes > widenAfter {
		nv = collapse(nv, "a value that changes as the script runs")
		if sameValue(nv, b.val) {
			return
		}
	}
	b.val = nv
	a.grew(b.read)
}

// grew notes that a variable or table read in walk read gained an
// alternative: a read earlier in this walk saw less than it holds now, so the
// script is walked again. One not read yet in this walk is read in full later.
func (a *analyzer) grew(read int) {
	if read >= a.pass {
		a.changed = true
	}
}

// contribute records what statement site assigns b (a declaration's part
// needs no site of its own: no declaration reads the variable it declares).
func (a *analyzer) contribute(b *binding, site any, v value) {
	if b.contrib == nil {
		b.contrib = map[any]value{}
	}
	var grew bool
	if b.contrib[site], grew = join(b.contrib[site], v); grew {
		a.grew(b.read) // read without another statement's part, it may have missed this one's
	}
}

func (a *analyzer) declared(b *binding, v value) { b.decl, _ = join(b.decl, v) }

// valueWithout is b's value without what statement site contributed: every
// other statement's part, and what it was declared with.
func (b *binding) valueWithout(site any) value {
	out := b.decl
	for s, v := range b.contrib {
		if s != site {
			out, _ = join(out, v)
		}
	}
	return out
}

func sameMap(x, y map[*binding]any) bool {
	if len(x) != len(y) {
		return false
	}
	for k, v := range x {
		if y[k] != v {
			return false
		}
	}
	return true
}

func sameValue(v, w value) bool {
	if len(v) != len(w) {
		return false
	}
	for _, x := range v {
		if !w.contains(x) {
			return false
		}
	}
	return true
}

func (a *analyzer) tableGrow(t *table, into *value, v value) {
	nv, grew := join(*into, v)
	if !grew {
		return
	}
	t.changes++
	if t.changes > 4*widenAfter {
		nv = collapse(nv, "a value that changes as the script runs")
		if sameValue(nv, *into) {
			return
		}
	}
	*into = nv
	a.grew(t.read)
}

func (a *analyzer) block(stmts []ast.Stmt, sc *scope) {
	for _, s := range stmts {
		if !a.step() {
			return
		}
		a.stmt(s, sc)
	}
}

func (a *analyzer) stmt(s ast.Stmt, sc *scope) {
	switch s := s.(type) {
	case *ast.LocalAssignStmt:
		if localFunction(s) {
			b := a.binding(s, 0, s.Names[0])
			sc.add(s.Names[0], b)
			fv := a.function(s.Exprs[0].(*ast.FunctionExpr), sc, "helper "+s.Names[0], false)
			a.declared(b, fv)
			a.assign(b, fv, s.Line(), true)
			return
		}
		vals, sp := a.list(s.Exprs, sc)
		bs := make([]*binding, len(s.Names))
		for i, name := range s.Names {
			bs[i] = a.binding(s, i, name)
		}
		for i, b := range bs {
			sc.add(s.Names[i], b)
			v := nth(vals, sp, i)
			a.declared(b, v)
			a.assign(b, v, s.Line(), true)
		}
	case *ast.AssignStmt:
		// x = x .. ':' .. y run once per declaration of x reads x as it is
		// without what this very statement assigns it.
		saved := a.without
		for _, l := range s.Lhs {
			if id, ok := l.(*ast.IdentExpr); ok {
				if b, once := sc.lookupOnce(id.Value); b != nil && once {
					if a.without == nil || len(a.without) == len(saved) && sameMap(a.without, saved) {
						a.without = map[*binding]any{}
						for k, v := range saved {
							a.without[k] = v
						}
					}
					a.without[b] = s
				}
			}
		}
		vals, sp := a.list(s.Rhs, sc)
		a.without = saved
		for i, l := range s.Lhs {
			a.storeAt(l, nth(vals, sp, i), sc, s)
		}
	case *ast.FuncCallStmt:
		a.expr(s.Expr, sc)
	case *ast.DoBlockStmt:
		a.block(s.Stmts, &scope{parent: sc})
	case *ast.WhileStmt:
		a.expr(s.Condition, sc)
		a.block(s.Stmts, &scope{parent: sc, loop: true})
	case *ast.RepeatStmt:
		inner := &scope{parent: sc, loop: true}
		a.block(s.Stmts, inner)
		a.expr(s.Condition, inner)
	case *ast.IfStmt:
		a.expr(s.Condition, sc)
		a.block(s.Then, &scope{parent: sc})
		a.block(s.Else, &scope{parent: sc})
	case *ast.NumberForStmt:
		a.expr(s.Init, sc)
		a.expr(s.Limit, sc)
		if s.Step != nil {
			a.expr(s.Step, sc)
		}
		inner := &scope{parent: sc, loop: true}
		b := a.binding(s, 0, s.Name)
		inner.add(s.Name, b)
		counter := number("a loop counter")
		if start := loopStart(s); start > 0 {
			counter.str.Parts[0].Min = int32(start)
		}
		a.declared(b, one(counter))
		a.assign(b, one(counter), s.Line(), true)
		a.block(s.Stmts, inner)
	case *ast.GenericForStmt:
		a.genericFor(s, sc)
	case *ast.FuncDefStmt:
		name := "function"
		switch f := s.Name.Func.(type) {
		case *ast.IdentExpr:
			name = "helper " + f.Value
		case *ast.AttrGetExpr:
			if k, ok := f.Key.(*ast.StringExpr); ok {
				name = "helper " + k.Value
			}
		}
		if s.Name.Method != "" {
			name = "method " + s.Name.Method
		}
		fv := a.function(s.Func, sc, name, s.Name.Method != "")
		if s.Name.Receiver != nil {
			recv := a.expr(s.Name.Receiver, sc)
			a.writeField(recv, one(text(s.Name.Method)), fv, s.Line())
			return
		}
		a.store(s.Name.Func, fv, sc)
	case *ast.ReturnStmt:
		vals, sp := a.list(s.Exprs, sc)
		f := a.top()
		for i, v := range vals {
			if i >= len(f.returns) {
				f.returns = append(f.returns, nil)
			}
			f.returns[i], _ = join(f.returns[i], v)
		}
		if sp != nil {
			if f.retSpread == nil {
				f.retSpread = &spread{}
			}
			f.retSpread.v, _ = join(f.retSpread.v, sp.v)
			if sp.keysFrom > 0 && (f.retSpread.keysFrom == 0 || f.retSpread.keysFrom == sp.keysFrom) {
				f.retSpread.keysFrom = sp.keysFrom
			}
		}
	}
}

// loopStart is the first value of a numeric for loop's counter when it counts
// up from a literal integer of at least 1 (for i = 2, #ARGV), so that the
// counter never holds less; else 0. The loop's own assignments to the counter
// are other alternatives of its variable, which then holds less than it.
func loopStart(s *ast.NumberForStmt) int {
	init, ok := s.Init.(*ast.NumberExpr)
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(init.Value)
	if err != nil || n < 1 {
		return 0
	}
	if s.Step != nil {
		step, ok := s.Step.(*ast.NumberExpr)
		if !ok {
			return 0
		}
		if k, err := strconv.Atoi(step.Value); err != nil || k < 1 {
			return 0
		}
	}
	return n
}

// leastIndex is the least value every alternative of an index may take (a
// loop counter from a literal start), or 0.
func leastIndex(key value) int {
	least := 0
	for _, k := range key {
		if k.kind != aStr || len(k.str.Parts) != 1 || k.str.Parts[0].Kind != PartNumber || k.str.Parts[0].Min < 1 {
			if k.kind == aNil {
				continue // an index that is nil raises an error first
			}
			return 0
		}
		if m := int(k.str.Parts[0].Min); least == 0 || m < least {
			least = m
		}
	}
	return least
}

// nth is the i-th value of an adjusted list: beyond the values, the spread's
// (or nil).
func nth(vals []value, sp *spread, i int) value {
	if i < len(vals) {
		return vals[i]
	}
	if sp != nil {
		return joinAll(sp.v, nilValue)
	}
	return nilValue
}

// store assigns v to the target l.
func (a *analyzer) store(l ast.Expr, v value, sc *scope) { a.storeAt(l, v, sc, nil) }

// storeAt assigns v to the target l, as statement site does.
func (a *analyzer) storeAt(l ast.Expr, v value, sc *scope, site any) {
	switch l := l.(type) {
	case *ast.IdentExpr:
		if b := sc.lookup(l.Value); b != nil {
			if site == nil {
				site = l
			}
			a.contribute(b, site, v)
			a.assign(b, v, l.Line(), false)
			return
		}
		if shadowed[l.Value] {
			return // refused by the syntax reading
		}
		b := a.globals[l.Value]
		if b == nil {
			b = &binding{name: l.Value}
			a.globals[l.Value] = b
		}
		a.assign(b, v, l.Line(), false)
	case *ast.AttrGetExpr:
		obj := a.expr(l.Object, sc)
		key := a.expr(l.Key, sc)
		a.writeField(obj, key, v, l.Line())
	}
}

// writeField is obj[key] = v.
func (a *analyzer) writeField(obj, key, v value, line int) {
	for _, o := range obj {
		switch o.kind {
		case aTable:
			a.tableStore(a.tables[o.id], key, v)
		case aKeys:
			a.unsafeUse(line, UnsafeKeysWrite, "assigns into KEYS through another name: KEYS is read-only; keep derived values in a local")
		case aArgv:
			a.unsafeUse(line, UnsafeArgvWrite, "assigns into ARGV through another name: ARGV is read-only; keep derived values in a local")
		case aData:
			a.escape(v, "a table the reading does not follow", line)
		case aAny:
			a.refuse(line, "assigns a field of a value the reading cannot name")
		}
	}
}

// tableStore is t[key] = v: a literal string key grows that field, a literal
// number the elements, a key the reading cannot tell the elements and anyKey.
func (a *analyzer) tableStore(t *table, key, v value) {
	switch k, kind := literalKey(key); kind {
	case 's':
		if t.fields == nil {
			t.fields = map[string]value{}
		}
		cur := t.fields[k]
		a.tableGrow(t, &cur, v)
		t.fields[k] = cur
	case 'n':
		a.tableGrow(t, &t.elems, v)
	default:
		a.tableGrow(t, &t.elems, v)
		a.tableGrow(t, &t.anyKey, v)
	}
}

// literalKey is the key of an index when it is one literal: 's' for a string,
// 'n' for a number; 0 otherwise.
func literalKey(key value) (string, byte) {
	if len(key) != 1 || key[0].kind != aStr || len(key[0].str.Parts) != 1 {
		return "", 0
	}
	p := key[0].str.Parts[0]
	switch p.Kind {
	case PartText:
		return p.Text, 's'
	case PartNumber:
		return p.Text, 'n'
	}
	return "", 0
}

// function is the value of a function expression evaluated in sc.
func (a *analyzer) function(f *ast.FunctionExpr, sc *scope, name string, method bool) value {
	k := siteKey{node: f, ctx: a.top().ctx}
	id, ok := a.closeIDs[k]
	if !ok {
		id = len(a.closures)
		a.closeIDs[k] = id
		if name == "" || name == "function" {
			name = fmt.Sprintf("the function of line %d", f.Line())
		}
		a.closures = append(a.closures, &closure{fn: f, name: name, method: method})
	}
	a.closures[id].env = sc
	return one(alt{kind: aFunc, id: id})
}

// table is the value of a table constructor evaluated in sc.
func (a *analyzer) table(e *ast.TableExpr, sc *scope) value {
	k := siteKey{node: e, ctx: a.top().ctx}
	id, ok := a.tableIDs[k]
	if !ok {
		id = len(a.tables)
		a.tableIDs[k] = id
		a.tables = append(a.tables, &table{})
	}
	t := a.tables[id]
	for i, f := range e.Fields {
		if f.Key == nil {
			if i == len(e.Fields)-1 {
				vals, sp := a.multi(f.Value, sc)
				for _, v := range vals {
					a.tableGrow(t, &t.elems, v)
				}
				if sp != nil {
					a.tableGrow(t, &t.elems, sp.v)
				}
				continue
			}
			a.tableGrow(t, &t.elems, a.expr(f.Value, sc))
			continue
		}
		key := a.expr(f.Key, sc)
		a.tableStore(t, key, a.expr(f.Value, sc))
	}
	return one(alt{kind: aTable, id: id})
}

// list evaluates an expression list as Lua adjusts it: every expression gives
// one value but the last, which gives all of its own (a call, ...).
func (a *analyzer) list(es []ast.Expr, sc *scope) ([]value, *spread) {
	var vals []value
	for i, e := range es {
		if i == len(es)-1 {
			vs, sp := a.multi(e, sc)
			return append(vals, vs...), sp
		}
		vals = append(vals, a.expr(e, sc))
	}
	return vals, nil
}

// multi is every value of e: a call's results, the varargs, or e's one value.
func (a *analyzer) multi(e ast.Expr, sc *scope) ([]value, *spread) {
	switch e := e.(type) {
	case *ast.FuncCallExpr:
		if !e.AdjustRet {
			return a.call(e, sc)
		}
	case *ast.Comma3Expr:
		if !e.AdjustRet {
			f := a.top()
			return f.varargs, f.varSpread
		}
	}
	return []value{a.expr(e, sc)}, nil
}

// expr is the value of e (its first value, for a call).
func (a *analyzer) expr(e ast.Expr, sc *scope) value {
	if !a.step() {
		return one(anyAlt("the reading stopped"))
	}
	switch e := e.(type) {
	case *ast.NilExpr:
		return nilValue
	case *ast.TrueExpr, *ast.FalseExpr:
		return boolValue
	case *ast.NumberExpr:
		return one(numberLit(e.Value))
	case *ast.StringExpr:
		return one(text(e.Value))
	case *ast.Comma3Expr:
		f := a.top()
		return nth(f.varargs, f.varSpread, 0)
	case *ast.IdentExpr:
		return a.ident(e, sc)
	case *ast.AttrGetExpr:
		obj := a.expr(e.Object, sc)
		key := a.expr(e.Key, sc)
		return a.index(obj, key, e.Line())
	case *ast.FuncCallExpr:
		vals, sp := a.call(e, sc)
		return nth(vals, sp, 0)
	case *ast.TableExpr:
		return a.table(e, sc)
	case *ast.FunctionExpr:
		return a.function(e, sc, "", false)
	case *ast.LogicalOpExpr:
		l := a.expr(e.Lhs, sc)
		r := a.expr(e.Rhs, sc)
		if e.Operator == "and" {
			return joinAll(falsy(l), r)
		}
		return joinAll(truthy(l), r)
	case *ast.RelationalOpExpr:
		a.expr(e.Lhs, sc)
		a.expr(e.Rhs, sc)
		return boolValue
	case *ast.StringConcatOpExpr:
		return concat(a.expr(e.Lhs, sc), a.expr(e.Rhs, sc))
	case *ast.ArithmeticOpExpr:
		a.numericUse(a.expr(e.Lhs, sc), e.Line())
		a.numericUse(a.expr(e.Rhs, sc), e.Line())
		return one(number("arithmetic"))
	case *ast.UnaryMinusOpExpr:
		if n, ok := e.Expr.(*ast.NumberExpr); ok {
			if lit, ok := luaInteger(n.Value, true); ok {
				return one(alt{kind: aStr, str: Str{Parts: []Part{{Kind: PartNumber, Text: lit}}}})
			}
		}
		a.numericUse(a.expr(e.Expr, sc), e.Line())
		return one(number("arithmetic"))
	case *ast.UnaryNotOpExpr:
		a.expr(e.Expr, sc)
		return boolValue
	case *ast.UnaryLenOpExpr:
		a.expr(e.Expr, sc)
		return one(number("a length"))
	}
	return one(anyAlt("an expression"))
}

// numericUse notes an ARGV position the script computes with.
func (a *analyzer) numericUse(v value, line int) {
	for _, x := range v {
		if x.kind == aStr && len(x.str.Parts) == 1 && x.str.Parts[0].Kind == PartArgv && x.str.Parts[0].N > 0 {
			if n := x.str.Parts[0].N; a.numeric[n] == 0 || line < a.numeric[n] {
				a.numeric[n] = line
			}
		}
	}
}

// libraries are the globals Redis provides that are library tables or functions.
var libraries = map[string]bool{
	"string": true, "table": true, "math": true, "cjson": true, "cmsgpack": true, "bit": true, "struct": true,
	"coroutine": true, "redis": true, "assert": true, "error": true, "getmetatable": true, "ipairs": true,
	"next": true, "pairs": true, "pcall": true, "rawequal": true, "select": true, "setmetatable": true,
	"tonumber": true, "tostring": true, "type": true, "unpack": true, "xpcall": true, "gcinfo": true,
	"collectgarbage": true,
}

func (a *analyzer) ident(e *ast.IdentExpr, sc *scope) value {
	if b := sc.lookup(e.Value); b != nil {
		b.read = a.pass
		if site, ok := a.without[b]; ok && b.contrib != nil {
			return b.valueWithout(site)
		}
		return b.val
	}
	switch e.Value {
	case "KEYS":
		return one(alt{kind: aKeys})
	case "ARGV":
		return one(alt{kind: aArgv})
	case "_VERSION":
		return one(text("Lua 5.1"))
	}
	if libraries[e.Value] {
		return one(alt{kind: aLib, name: e.Value})
	}
	if opaque[e.Value] {
		return one(anyAlt(e.Value))
	}
	if b := a.globals[e.Value]; b != nil {
		b.read = a.pass
		return b.val
	}
	return nil // an undefined global: Redis raises an error
}

// redisFieldValue is the value of redis.<name>.
func redisFieldValue(name string) value {
	switch {
	case name == "call" || name == "pcall":
		return one(alt{kind: aRedisCall, name: name})
	case strings.HasPrefix(name, "LOG_") || strings.HasPrefix(name, "REPL_") || name == "REDIS_VERSION_NUM":
		return one(number("redis." + name))
	case name == "REDIS_VERSION":
		return one(data("redis.REDIS_VERSION"))
	case redisFields[name]:
		return one(alt{kind: aLib, name: "redis." + name})
	}
	return nil
}

// index is obj[key].
func (a *analyzer) index(obj, key value, line int) value { return a.indexDepth(obj, key, line, 0) }

func (a *analyzer) indexDepth(obj, key value, line, depth int) value {
	var out value
	add := func(v value) { out, _ = join(out, v) }
	k, kind := literalKey(key)
	for _, o := range obj {
		switch o.kind {
		case aKeys:
			if n, err := strconv.Atoi(k); kind == 'n' && err == nil && n > 0 {
				add(one(keyAlt(n)))
			} else {
				add(one(keyAlt(0)))
			}
			add(nilValue)
		case aArgv:
			if n, err := strconv.Atoi(k); kind == 'n' && err == nil && n > 0 {
				add(one(argvAlt(n)))
			} else {
				at := argvAlt(0)
				at.str.Parts[0].Min = int32(leastIndex(key))
				add(one(at))
			}
			add(nilValue)
		case aTable:
			t := a.tables[o.id]
			t.read = a.pass
			if len(t.meta) > 0 {
				add(a.metaIndex(t.meta, key, line, depth))
			}
			add(t.anyKey)
			add(nilValue)
			switch kind {
			case 's':
				add(t.fields[k])
			case 'n':
				add(t.elems)
			default:
				add(t.elems)
				for _, f := range sortedFields(t) {
					add(t.fields[f])
				}
			}
		case aLib:
			switch {
			case kind == 's' && o.name == "redis":
				add(redisFieldValue(k))
			case o.name == "redis":
				add(one(anyAlt("a field of redis the reading cannot name")))
			case kind == 's' && strings.Contains(o.name, "."):
				// string.format.x: a function has no fields (an error).
			case kind == 's' && o.name == "math" && (k == "pi" || k == "huge"):
				add(one(number("math." + k)))
			case kind == 's' && o.name == "cjson" && k == "null":
				add(one(data("cjson.null")))
			case kind == 's' && !strings.Contains(o.name, "."):
				add(one(alt{kind: aLib, name: o.name + "." + k}))
			default:
				add(one(alt{kind: aLib, name: o.name + ".?"}))
			}
		case aStr:
			// The string library through the strings' metatable: s:sub(1, 2).
			if kind == 's' {
				add(one(alt{kind: aLib, name: "string." + k}))
			} else {
				add(nilValue)
			}
		case aData:
			add(one(data(o.name)))
		case aAny:
			add(one(anyAlt(o.name)))
		}
	}
	return out
}

// metaIndex is what the __index of the metatables mt answers for key: the
// fields of an __index table (and its own metatables'), or anything for an
// __index the reading does not follow.
func (a *analyzer) metaIndex(mt, key value, line, depth int) value {
	if depth > 8 {
		return one(anyAlt("a field of a table with a metatable"))
	}
	var out value
	for _, m := range mt {
		if m.kind != aTable {
			out, _ = join(out, one(anyAlt("a field of a table with a metatable")))
			continue
		}
		mtab := a.tables[m.id]
		mtab.read = a.pass
		idx, _ := join(mtab.fields["__index"], mtab.anyKey)
		for _, x := range idx {
			switch x.kind {
			case aNil:
			case aTable:
				out, _ = join(out, a.indexDepth(one(x), key, line, depth+1))
			default:
				// An __index function escaped when the metatable was set.
				out, _ = join(out, one(anyAlt("a field of a table with a metatable")))
			}
		}
	}
	return out
}

func sortedFields(t *table) []string {
	out := make([]string, 0, len(t.fields))
	for k := range t.fields {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// call evaluates a call expression.
func (a *analyzer) call(e *ast.FuncCallExpr, sc *scope) ([]value, *spread) {
	var callee value
	var args []value
	var exprs []ast.Expr
	if e.Receiver != nil {
		recv := a.expr(e.Receiver, sc)
		callee = a.index(recv, one(text(e.Method)), e.Line())
		args = append(args, recv)
		exprs = append(exprs, e.Receiver)
	} else {
		callee = a.expr(e.Func, sc)
	}
	vals, sp := a.list(e.Args, sc)
	args = append(args, vals...)
	exprs = append(exprs, e.Args...)
	return a.callValue(callee, args, sp, exprs, e, e.Line(), sc)
}

// callValue calls every function callee may be.
func (a *analyzer) callValue(callee value, args []value, sp *spread, exprs []ast.Expr, site any, line int, sc *scope) ([]value, *spread) {
	var outVals []value
	var outSpread *spread
	merge := func(vals []value, s *spread) {
		for i, v := range vals {
			for len(outVals) <= i {
				outVals = append(outVals, nil)
			}
			outVals[i], _ = join(outVals[i], v)
		}
		if s != nil {
			if outSpread == nil {
				outSpread = &spread{keysFrom: s.keysFrom}
			}
			outSpread.v, _ = join(outSpread.v, s.v)
			if outSpread.keysFrom != s.keysFrom {
				outSpread.keysFrom = 0
			}
		}
	}
	for _, c := range callee {
		switch c.kind {
		case aRedisCall:
			a.redisCall(c.name, args, sp, exprs, line, sc)
			what := "redis." + c.name
			if len(args) > 0 {
				if name, ok := args[0].single(); ok {
					what = strings.ToUpper(name)
				}
			}
			merge([]value{one(data(fmt.Sprintf("the reply of %s, line %d", what, line)))}, nil)
		case aFunc:
			merge(a.callClosure(c.id, a.closures[c.id], args, sp, site, line, false))
		case aLib:
			merge(a.library(c.name, args, sp, exprs, site, line, sc))
		case aCoFunc:
			a.escapeAll(args, sp, "a coroutine", line)
			merge([]value{one(anyAlt("what a coroutine yields"))}, &spread{v: one(anyAlt("what a coroutine yields"))})
		case aData:
			// Calling data is an error, unless it holds a function that escaped
			// (analysed already with arguments that may be anything).
			a.escapeAll(args, sp, "a function the reading cannot name", line)
			merge([]value{one(anyAlt("the result of a function the reading cannot name"))}, &spread{v: one(anyAlt("the result of a function the reading cannot name"))})
		case aTable:
			if len(a.tables[c.id].meta) > 0 {
				// Its __call escaped when the metatable was set.
				a.escapeAll(args, sp, "a metamethod", line)
				merge([]value{one(anyAlt("the result of a metamethod"))}, &spread{v: one(anyAlt("the result of a metamethod"))})
			}
		case aAny:
			a.refuse(line, fmt.Sprintf("calls a function the reading cannot name (%s)", c.name))
			a.escapeAll(args, sp, "a function the reading cannot name", line)
			merge([]value{one(anyAlt("the result of a function the reading cannot name"))}, &spread{v: one(anyAlt("the result of a function the reading cannot name"))})
		}
	}
	return outVals, outSpread
}

// callClosure follows a call of one of the script's functions into its body,
// with this call's arguments.
func (a *analyzer) callClosure(id int, c *closure, args []value, sp *spread, site any, line int, escaped bool) ([]value, *spread) {
	if c.env == nil {
		return nil, nil
	}
	for _, f := range a.stack {
		if f.fn != nil && f.fn.fn == c.fn {
			if escaped || c.fn.ParList.HasVargs {
				a.refuse(line, fmt.Sprintf("%s calls itself (directly or through another helper) with varargs or from code the reading does not follow: write it as a loop", c.name))
				return []value{one(anyAlt("the result of a recursive call"))}, &spread{v: one(anyAlt("the result of a recursive call"))}
			}
			return a.recurse(f, c, args, sp)
		}
	}
	if len(a.stack) > maxDepth {
		a.refuse(line, fmt.Sprintf("helpers nested more than %d deep", maxDepth))
		return []value{one(anyAlt("a result the reading did not follow"))}, nil
	}
	parent := a.top().ctx
	if escaped {
		parent = -2 - id
	}
	ck := ctxKey{parent: parent, site: site, fn: id}
	ctx, ok := a.ctxIDs[ck]
	if !ok {
		if len(a.ctxIDs) > maxContexts {
			if a.stopped == "" {
				a.stopped = fmt.Sprintf("more than %d helper call chains to follow", maxContexts)
			}
			return nil, nil
		}
		ctx = len(a.ctxIDs)
		a.ctxIDs[ck] = ctx
	}
	f := &frame{ctx: ctx, fn: c, line: line, args: args}
	if escaped {
		f.line = 0
	}
	a.stack = append(a.stack, f)
	defer func() { a.stack = a.stack[:len(a.stack)-1] }()
	sc := &scope{parent: c.env, fn: true}
	i := 0
	if c.method {
		b := a.binding(c.fn, -1, "self")
		sc.add("self", b)
		a.declared(b, nth(args, sp, 0))
		a.assign(b, nth(args, sp, 0), c.fn.Line(), true)
		i = 1
	}
	names := c.fn.ParList.Names
	for j, name := range names {
		b := a.binding(c.fn, j, name)
		sc.add(name, b)
		a.declared(b, nth(args, sp, i+j))
		a.assign(b, nth(args, sp, i+j), c.fn.Line(), true)
	}
	if c.fn.ParList.HasVargs {
		if n := i + len(names); n < len(args) {
			f.varargs = args[n:]
		}
		f.varSpread = sp
	}
	a.block(c.fn.Stmts, sc)
	if r := a.recursive[ctx]; r != nil {
		// What this call returns, a recursive call inside it returns too.
		grew := false
		for i, v := range f.returns {
			if i >= len(r.returns) {
				r.returns = append(r.returns, nil)
			}
			var g bool
			r.returns[i], g = join(r.returns[i], v)
			grew = grew || g
		}
		if f.retSpread != nil {
			if r.retSpread == nil {
				r.retSpread = &spread{keysFrom: f.retSpread.keysFrom}
			}
			var g bool
			r.retSpread.v, g = join(r.retSpread.v, f.retSpread.v)
			grew = grew || g
			if r.retSpread.keysFrom != f.retSpread.keysFrom {
				r.retSpread.keysFrom = 0
			}
		}
		if grew {
			a.changed = true
		}
		return joinReturns(f.returns, r.returns), f.retSpread
	}
	return f.returns, f.retSpread
}

// recursive is what a function called from its own body (directly or through
// other helpers) returns, over every walk.
type recursive struct {
	returns   []value
	retSpread *spread
}

// recurse reads a call of a function from inside its own body: rather than a
// new context, it is the outer call's, whose parameters gain this call's
// arguments (a variable holds every value ever assigned to it, so the body
// read once covers every depth of the recursion); it returns what the outer
// call returns, which the walks grow until they settle.
func (a *analyzer) recurse(outer *frame, c *closure, args []value, sp *spread) ([]value, *spread) {
	i := 0
	if c.method {
		b := a.bindingIn(outer.ctx, c.fn, -1, "self")
		a.declared(b, nth(args, sp, 0))
		a.assign(b, nth(args, sp, 0), c.fn.Line(), true)
		i = 1
	}
	for j, name := range c.fn.ParList.Names {
		b := a.bindingIn(outer.ctx, c.fn, j, name)
		a.declared(b, nth(args, sp, i+j))
		a.assign(b, nth(args, sp, i+j), c.fn.Line(), true)
	}
	r := a.recursive[outer.ctx]
	if r == nil {
		r = &recursive{}
		a.recursive[outer.ctx] = r
		a.changed = true // the outer call's returns are joined in from now on
	}
	return r.returns, r.retSpread
}

// joinReturns is the union of two lists of returned values.
func joinReturns(a, b []value) []value {
	out := make([]value, max(len(a), len(b)))
	for i := range out {
		if i < len(a) {
			out[i] = a[i]
		}
		if i < len(b) {
			out[i], _ = join(out[i], b[i])
		}
	}
	return out
}

// escapeAll escapes every argument.
func (a *analyzer) escapeAll(args []value, sp *spread, to string, line int) {
	for _, v := range args {
		a.escape(v, to, line)
	}
	if sp != nil {
		a.escape(sp.v, to, line)
	}
}

// escape hands v to code the analysis does not follow: its functions are then
// analysed with arguments that may be anything, redis.call (and the library
// functions that change tables) must not go there, nor KEYS or ARGV.
func (a *analyzer) escape(v value, to string, line int) {
	a.escapeSeen(v, to, line, map[int]bool{})
}

func (a *analyzer) escapeSeen(v value, to string, line int, seen map[int]bool) {
	for _, x := range v {
		switch x.kind {
		case aFunc:
			if c := a.closures[x.id]; !c.escaped {
				c.escaped = true
				a.changed = true
			}
		case aRedisCall:
			a.refuse(line, fmt.Sprintf("redis.%s handed to %s: the reading can check only calls it sees", x.name, to))
		case aLib:
			if tableChangers[x.name] {
				a.refuse(line, fmt.Sprintf("%s handed to %s, which may call it on KEYS or ARGV", x.name, to))
			}
		case aKeys:
			a.unsafeUse(line, UnsafeKeysWrite, fmt.Sprintf("passes KEYS to %s, which may change it: KEYS is read-only; pass KEYS[n], or copy what you need into a local table", to))
		case aArgv:
			a.unsafeUse(line, UnsafeArgvWrite, fmt.Sprintf("passes ARGV to %s, which may change it: ARGV is read-only; copy what you need into a local table", to))
		case aTable:
			if seen[x.id] {
				continue
			}
			seen[x.id] = true
			t := a.tables[x.id]
			t.read = a.pass
			a.escapeSeen(t.elems, to, line, seen)
			a.escapeSeen(t.anyKey, to, line, seen)
			for _, f := range sortedFields(t) {
				a.escapeSeen(t.fields[f], to, line, seen)
			}
		}
	}
}

// tableChangers are library functions that change the table passed to them.
var tableChangers = map[string]bool{
	"table.insert": true, "table.remove": true, "table.sort": true, "setmetatable": true,
	"table.foreach": true, "table.foreachi": true,
}

// genericFor is for names in exprs do ... end.
func (a *analyzer) genericFor(s *ast.GenericForStmt, sc *scope) {
	vals, sp := a.list(s.Exprs, sc)
	fn := nth(vals, sp, 0)
	state := nth(vals, sp, 1)
	ctl := nth(vals, sp, 2)
	loop := make([]value, len(s.Names))
	addAt := func(i int, v value) {
		if i < len(loop) {
			loop[i], _ = join(loop[i], v)
		}
	}
	for _, f := range fn {
		switch {
		case f.kind == aLib && f.name == "ipairs.iter":
			addAt(0, one(number("a loop counter")))
			addAt(1, truthy(a.index(state, one(number("a loop counter")), s.Line())))
		case f.kind == aLib && f.name == "next":
			addAt(0, a.keysOf(state))
			addAt(1, truthy(a.index(state, one(data("a key")), s.Line())))
		default:
			rv, rs := a.callValue(one(f), []value{state, joinAll(ctl, a.nthLoop(loop, 0))}, nil, nil, s, s.Line(), sc)
			for i := range loop {
				addAt(i, nth(rv, rs, i))
			}
		}
	}
	inner := &scope{parent: sc, loop: true}
	for i, name := range s.Names {
		b := a.binding(s, i, name)
		inner.add(name, b)
		a.declared(b, loop[i])
		a.assign(b, loop[i], s.Line(), true)
	}
	a.block(s.Stmts, inner)
}

func (a *analyzer) nthLoop(loop []value, i int) value {
	if i < len(loop) {
		return loop[i]
	}
	return nil
}

// keysOf are the keys a pairs() loop over v may see.
func (a *analyzer) keysOf(v value) value {
	var out value
	for _, x := range v {
		switch x.kind {
		case aTable:
			t := a.tables[x.id]
			t.read = a.pass
			for _, f := range sortedFields(t) {
				out, _ = join(out, one(text(f)))
			}
			out, _ = join(out, one(number("a table index")))
			if len(t.anyKey) > 0 {
				out, _ = join(out, one(data("a table key")))
			}
		case aKeys, aArgv:
			out, _ = join(out, one(number("a table index")))
		default:
			out, _ = join(out, one(data("a table key")))
		}
	}
	return out
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

// returnKinds sums up what the main chunk may reply.
func returnKinds(main *frame) []string {
	seen := map[string]bool{}
	if main == nil || len(main.returns) == 0 {
		seen["nil"] = true
	} else {
		for _, x := range main.returns[0] {
			k := "value"
			switch x.kind {
			case aNil:
				k = "nil"
			case aBool, aFalse:
				k = "bool"
			case aTable:
				k = "table"
			case aStr:
				k = "string"
				if x.str.Number() {
					k = "number"
				}
			case aData:
				switch {
				case strings.HasPrefix(x.name, "redis.error_reply"):
					k = "error"
				case strings.HasPrefix(x.name, "redis.status_reply"):
					k = "status"
				case strings.HasPrefix(x.name, "the reply of"):
					k = "reply"
				}
			}
			seen[k] = true
		}
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
