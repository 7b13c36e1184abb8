package luascript

import (
	"fmt"
	"slices"
	"strings"

	"github.com/yuin/gopher-lua/ast"
)

// library is a call of a library function of Redis's Lua: what it returns, and
// what it does with the script's values (a function it calls back is followed or
// escapes; a table it changes gains the value).
func (a *analyzer) library(name string, args []value, sp *spread, exprs []ast.Expr, site any, line int, sc *scope) ([]value, *spread) {
	arg := func(i int) value { return nth(args, sp, i) }
	ret := func(vs ...value) ([]value, *spread) { return vs, nil }
	dataOf := func(what string) value { return one(data(fmt.Sprintf("%s (line %d)", what, line))) }
	num := func(what string) value { return one(number(what)) }
	switch name {
	case "tonumber":
		a.numericUse(arg(0), line)
		return ret(joinAll(num("tonumber"), nilValue))
	case "tostring":
		var out value
		for _, x := range arg(0) {
			switch x.kind {
			case aStr, aData:
				out, _ = join(out, one(x))
			case aTable, aAny:
				out, _ = join(out, one(anyAlt("tostring of a table")))
			default:
				out, _ = join(out, dataOf("tostring"))
			}
		}
		return ret(out)
	case "type":
		return ret(dataOf("type"))
	case "select":
		if s, ok := arg(0).single(); ok && s == "#" {
			return ret(num("select('#', ...)"))
		}
		a.numericUse(arg(0), line)
		rest := joinAll(args[min(1, len(args)):]...)
		if sp != nil {
			rest, _ = join(rest, sp.v)
		}
		return []value{joinAll(rest, nilValue)}, &spread{v: rest}
	case "unpack":
		return nil, a.unpack(arg(0), args, line)
	case "ipairs":
		return ret(one(alt{kind: aLib, name: "ipairs.iter"}), arg(0), num("0"))
	case "pairs":
		return ret(one(alt{kind: aLib, name: "next"}), arg(0), nilValue)
	case "next":
		return ret(joinAll(a.keysOf(arg(0)), nilValue), joinAll(a.index(arg(0), one(data("a key")), line)))
	case "assert":
		return args, sp
	case "error":
		a.escapeAll(args, sp, "error (whatever catches it)", line)
		return nil, nil
	case "pcall":
		rv, rs := a.callValue(arg(0), tail(args, 1), sp, tailExprs(exprs, 1), site, line, sc)
		first := dataOf("an error message")
		if len(rv) > 0 {
			first, _ = join(first, rv[0])
			rv = rv[1:]
		}
		return append([]value{boolValue, first}, rv...), rs
	case "xpcall":
		rv, rs := a.callValue(arg(0), nil, nil, nil, site, line, sc)
		hv, _ := a.callValue(arg(1), []value{dataOf("an error message")}, nil, nil, site, line, sc)
		first := nth(hv, nil, 0)
		if len(rv) > 0 {
			first, _ = join(first, rv[0])
			rv = rv[1:]
		}
		return append([]value{boolValue, first}, rv...), rs
	case "setmetatable":
		for _, x := range arg(0) {
			switch x.kind {
			case aTable:
				t := a.tables[x.id]
				if nv, grew := join(t.meta, arg(1)); grew {
					t.meta = nv
					a.changed = true
				}
			case aKeys:
				a.unsafeUse(line, UnsafeKeysWrite, "sets a metatable on KEYS: KEYS is read-only")
			case aArgv:
				a.unsafeUse(line, UnsafeArgvWrite, "sets a metatable on ARGV: ARGV is read-only")
			}
		}
		a.escapeMetamethods(arg(1), line)
		return ret(arg(0))
	case "getmetatable":
		return ret(one(anyAlt("a metatable")))
	case "rawequal":
		return ret(boolValue)
	case "gcinfo", "collectgarbage":
		return ret(num(name))
	}
	lib, fn, _ := strings.Cut(name, ".")
	switch lib {
	case "redis":
		return a.redisLib(fn, args, sp, line)
	case "string":
		return a.stringLib(fn, args, sp, line)
	case "table":
		return a.tableLib(fn, args, sp, line)
	case "math", "bit":
		for _, v := range args {
			a.numericUse(v, line)
		}
		return ret(num(name))
	case "cjson", "cmsgpack", "struct":
		switch fn {
		case "size":
			return ret(num(name))
		case "decode", "unpack":
			d := dataOf(name)
			return []value{d}, &spread{v: d}
		}
		// encode and pack read the table they are given; a function in it is an error.
		return ret(dataOf(name))
	case "coroutine":
		switch fn {
		case "create":
			a.escape(arg(0), "coroutine.create", line)
			return ret(dataOf("a coroutine"))
		case "wrap":
			a.escape(arg(0), "coroutine.wrap", line)
			return ret(one(alt{kind: aCoFunc}))
		case "resume", "yield":
			a.escapeAll(args, sp, "coroutine."+fn, line)
			r := one(anyAlt("a value passed between coroutines"))
			if fn == "resume" {
				return []value{boolValue, r}, &spread{v: r}
			}
			return []value{r}, &spread{v: r}
		}
		return ret(dataOf(name))
	case "ipairs":
		// The iterator ipairs returns, called by hand: (i+1, t[i+1]).
		return ret(num("an index"), a.index(arg(0), num("an index"), line))
	}
	// A library function the reading does not model (a field named at run time).
	a.escapeAll(args, sp, name, line)
	return ret(dataOf(name))
}

func tail(vs []value, n int) []value {
	if n >= len(vs) {
		return nil
	}
	return vs[n:]
}

func tailExprs(es []ast.Expr, n int) []ast.Expr {
	if n >= len(es) {
		return nil
	}
	return es[n:]
}

// single is the text of a value that is one literal.
func (v value) single() (string, bool) {
	if len(v) != 1 || v[0].kind != aStr {
		return "", false
	}
	return v[0].str.Literal()
}

// unpack is unpack(t, i, j): a spread of t's elements.
func (a *analyzer) unpack(t value, args []value, line int) *spread {
	sp := &spread{}
	from := 1
	if len(args) > 1 {
		from = 0
		if k, kind := literalKey(args[1]); kind == 'n' {
			fmt.Sscan(k, &from)
		}
	}
	bounded := len(args) > 2
	for _, x := range t {
		switch x.kind {
		case aKeys:
			sp.v, _ = join(sp.v, one(keyAlt(0)))
			if from > 0 && !bounded && len(t) == 1 {
				sp.keysFrom = from
			}
		case aArgv:
			sp.v, _ = join(sp.v, one(argvAlt(0)))
		case aTable:
			tb := a.tables[x.id]
			tb.read = a.pass
			sp.v, _ = join(sp.v, truthy(tb.elems))
			sp.v, _ = join(sp.v, truthy(tb.anyKey))
			if len(tb.meta) > 0 {
				sp.v, _ = join(sp.v, one(anyAlt("a field of a table with a metatable")))
			}
		case aData:
			sp.v, _ = join(sp.v, one(x))
		case aAny:
			sp.v, _ = join(sp.v, one(x))
		}
	}
	return sp
}

// redisLib is redis.<fn>(...) other than call and pcall.
func (a *analyzer) redisLib(fn string, args []value, sp *spread, line int) ([]value, *spread) {
	switch fn {
	case "replicate_commands":
		// A no-op in Redis 7, which always replicates a script's effects.
		return []value{boolValue}, nil
	case "acl_check_cmd":
		return []value{boolValue}, nil
	case "sha1hex", "error_reply", "status_reply":
		return []value{one(data(fmt.Sprintf("redis.%s (line %d)", fn, line)))}, nil
	}
	return nil, nil // log, setresp, set_repl (refused by the syntax reading), breakpoint, debug
}

// stringLib is string.<fn>(...).
func (a *analyzer) stringLib(fn string, args []value, sp *spread, line int) ([]value, *spread) {
	arg := func(i int) value { return nth(args, sp, i) }
	d := one(data(fmt.Sprintf("string.%s (line %d)", fn, line)))
	switch fn {
	case "format":
		return []value{a.format(args, sp, line)}, nil
	case "len", "byte":
		return []value{one(number("string." + fn))}, &spread{v: one(number("string." + fn))}
	case "find":
		return []value{joinAll(one(number("string.find")), nilValue), one(number("string.find"))}, &spread{v: d}
	case "lower", "upper":
		var out value
		for _, x := range arg(0) {
			if s, ok := x.str.Literal(); x.kind == aStr && ok {
				if fn == "lower" {
					s = strings.ToLower(s)
				} else {
					s = strings.ToUpper(s)
				}
				out, _ = join(out, one(text(s)))
				continue
			}
			out, _ = join(out, d)
		}
		return []value{out}, nil
	case "gsub":
		a.escape(arg(2), "string.gsub", line)
		return []value{d, one(number("string.gsub"))}, nil
	case "gmatch":
		return []value{one(alt{kind: aLib, name: "string.gmatch.iter"})}, nil
	case "gmatch.iter", "match":
		return []value{joinAll(d, nilValue)}, &spread{v: d}
	case "rep", "sub", "reverse", "char", "dump":
		return []value{d}, nil
	}
	a.escapeAll(args, sp, "string."+fn, line)
	return []value{d}, nil
}

// format is string.format(fmt, ...) with a literal format: the concatenation
// it builds (%s and %d of the arguments); anything else is an unnamed string.
func (a *analyzer) format(args []value, sp *spread, line int) value {
	d := one(data(fmt.Sprintf("string.format (line %d)", line)))
	f, ok := nth(args, sp, 0).single()
	if !ok {
		return d
	}
	out := one(text(""))
	next := 1
	for i := 0; i < len(f); i++ {
		c := f[i]
		if c != '%' {
			out = concat(out, one(text(string(c))))
			continue
		}
		if i+1 >= len(f) {
			return d
		}
		i++
		switch f[i] {
		case '%':
			out = concat(out, one(text("%")))
		case 's':
			v := nth(args, sp, next)
			next++
			var s value
			for _, x := range v {
				switch x.kind {
				case aStr, aData:
					s, _ = join(s, one(x))
				case aAny:
					s, _ = join(s, one(data("a value the reading cannot name (string.format)")))
				}
				// %s of nil, a boolean or a table is an error in Lua 5.1.
			}
			out = concat(out, s)
		case 'd', 'i':
			a.numericUse(nth(args, sp, next), line)
			next++
			out = concat(out, one(number("string.format %d")))
		default:
			return d
		}
	}
	return out
}

// tableLib is table.<fn>(...).
func (a *analyzer) tableLib(fn string, args []value, sp *spread, line int) ([]value, *spread) {
	arg := func(i int) value { return nth(args, sp, i) }
	guard := func() {
		for _, x := range arg(0) {
			switch x.kind {
			case aKeys:
				a.unsafeUse(line, UnsafeKeysWrite, fmt.Sprintf("passes KEYS to table.%s, which may change it: KEYS is read-only; pass KEYS[n], or copy what you need into a local table", fn))
			case aArgv:
				a.unsafeUse(line, UnsafeArgvWrite, fmt.Sprintf("passes ARGV to table.%s, which may change it: ARGV is read-only; copy what you need into a local table", fn))
			case aAny:
				a.refuse(line, fmt.Sprintf("table.%s on a table the reading cannot name", fn))
			}
		}
	}
	switch fn {
	case "insert":
		guard()
		v := arg(len(args) - 1)
		if len(args) < 2 {
			v = nil
		}
		for _, x := range arg(0) {
			if x.kind == aTable {
				t := a.tables[x.id]
				a.tableGrow(t, &t.elems, v)
			}
			if x.kind == aData {
				a.escape(v, "a table the reading does not follow", line)
			}
		}
		return nil, nil
	case "remove":
		guard()
		var out value
		for _, x := range arg(0) {
			switch x.kind {
			case aTable:
				a.tables[x.id].read = a.pass
				out, _ = join(out, a.tables[x.id].elems)
			case aData, aAny:
				out, _ = join(out, one(x))
			}
		}
		return []value{joinAll(out, nilValue)}, nil
	case "sort":
		guard()
		a.escape(arg(1), "table.sort", line)
		return nil, nil
	case "foreach", "foreachi":
		guard()
		a.escape(arg(1), "table."+fn, line)
		return []value{one(anyAlt("the result of table." + fn))}, nil
	case "getn", "maxn":
		return []value{one(number("table." + fn))}, nil
	case "concat":
		return []value{one(data(fmt.Sprintf("table.concat (line %d)", line)))}, nil
	}
	a.escapeAll(args, sp, "table."+fn, line)
	return []value{one(data("table." + fn))}, nil
}

// pendingCall is one redis.call as a walk meets it; only the last walk's are
// made into Calls (buildCall).
type pendingCall struct {
	fn    string
	args  []value
	sp    *spread
	exprs []ast.Expr
	line  int
	sc    *scope
	via   []Site
	entry []int // per argument alternative, the line it entered the helper chain at
}

// redisCall records one redis.call or redis.pcall (reached directly, through an
// alias, or through pcall) with the values its arguments may have here.
func (a *analyzer) redisCall(fn string, args []value, sp *spread, exprs []ast.Expr, line int, sc *scope) {
	p := pendingCall{fn: fn, args: args, sp: sp, exprs: exprs, line: line, sc: sc}
	for _, f := range a.stack {
		if f.fn != nil && f.line > 0 {
			p.via = append(p.via, Site{Line: f.line, Func: f.fn.name})
		}
	}
	if len(p.via) > 0 {
		// Where each alternative entered the helpers, while the stack is here.
		// (in the order arg and spreadArg make the alternatives).
		add := func(v value) {
			for _, x := range v {
				switch x.kind {
				case aStr:
					p.entry = append(p.entry, a.enteredAt(x.str))
				case aData, aAny:
					p.entry = append(p.entry, 0)
				}
			}
		}
		for _, v := range args {
			add(v)
		}
		if sp != nil {
			add(sp.v)
		}
	}
	a.calls = append(a.calls, p)
}

// buildCall makes the Calls of one recorded redis.call: one per command name it
// may run.
func (a *analyzer) buildCall(p pendingCall) []Call {
	fn, args, sp, exprs, line, sc, via := p.fn, p.args, p.sp, p.exprs, p.line, p.sc, p.via
	n := len(args)
	if sp != nil {
		n++
	}
	out := make([]Arg, 0, n)
	for i, v := range args {
		var e ast.Expr
		if i < len(exprs) {
			e = exprs[i]
		}
		out = append(out, a.arg(v, e, sc))
	}
	if sp != nil {
		out = append(out, a.spreadArg(sp, exprs, len(args)))
	}
	if p.entry != nil {
		k := 0
		for i := range out {
			for j := range out[i].Alts {
				out[i].Alts[j].Via = p.entry[k]
				k++
			}
		}
	}
	c := Call{Line: line, Fn: fn, Args: out, Via: via}
	if len(out) > 0 {
		c.NArgs = len(out) - 1
		for _, x := range out[1:] {
			lit := ""
			if x.Kind == ArgString {
				lit = strings.ToLower(x.Text)
			}
			c.Literals = append(c.Literals, lit)
		}
		for j, x := range out {
			if x.Kind == ArgKey {
				for _, k := range x.KeyAlts {
					if k > 0 && !slices.Contains(c.Keys, k) {
						c.Keys = append(c.Keys, k)
					}
				}
				if j == 1 && len(x.KeyAlts) == 1 && x.KeyAlts[0] > 0 {
					c.FirstKey = x.KeyAlts[0]
				}
			}
		}
	}
	var names []string
	if len(out) > 0 && out[0].Kind != ArgSpread {
		for _, s := range out[0].Alts {
			lit, ok := s.Literal()
			if !ok {
				names = nil
				break
			}
			if lit = strings.ToLower(lit); !slices.Contains(names, lit) {
				names = append(names, lit)
			}
		}
	}
	if len(names) == 0 {
		return []Call{c}
	}
	if len(names) > 1 {
		c.Choice = names
	}
	var calls []Call
	for _, name := range names {
		ci := c
		ci.Command = name
		calls = append(calls, ci)
	}
	return calls
}

// enteredAt is the line of the outermost helper call whose arguments carried s.
func (a *analyzer) enteredAt(s Str) int {
	for _, f := range a.stack {
		if f.fn == nil || f.line == 0 {
			continue
		}
		for _, v := range f.args {
			for _, x := range v {
				if x.kind == aStr && x.str.equal(s) {
					return f.line
				}
			}
		}
	}
	return 0
}

// arg is what the reading knows of one argument of redis.call.
func (a *analyzer) arg(v value, e ast.Expr, sc *scope) Arg {
	var out Arg
	for _, x := range v {
		switch x.kind {
		case aStr:
			out.Alts = append(out.Alts, x.str)
		case aData, aAny:
			out.Alts = append(out.Alts, Str{Parts: []Part{{Kind: PartValue, Origin: x.name, Folded: x.folded || x.kind == aAny}}})
		}
	}
	out.Kind, out.Text, out.Key, out.Argv, out.KeyAlts = classify(out.Alts)
	if out.Kind == ArgArgv && out.Argv == 0 {
		out.ArgvMin = int(out.Alts[0].Parts[0].Min)
	}
	out.Desc = a.describe(out, e, sc)
	return out
}

// classify sums up an argument's alternatives as one ArgKind.
func classify(alts []Str) (kind ArgKind, text string, key, argv int, keyAlts []int) {
	if len(alts) == 0 {
		return ArgOther, "", 0, 0, nil
	}
	if lit, ok := alts[0].Literal(); ok {
		same := true
		for _, s := range alts[1:] {
			if l, ok := s.Literal(); !ok || l != lit {
				same = false
			}
		}
		if same {
			return ArgString, lit, 0, 0, nil
		}
	}
	numbers := true
	for _, s := range alts {
		if !s.Number() {
			numbers = false
		}
	}
	if numbers {
		if len(alts) == 1 && alts[0].Parts[0].Text != "" {
			return ArgInteger, alts[0].Parts[0].Text, 0, 0, nil
		}
		return ArgNumber, "", 0, 0, nil
	}
	var keys []int
	for _, s := range alts {
		n, ok := s.Key()
		if !ok {
			keys = nil
			break
		}
		if !slices.Contains(keys, n) {
			keys = append(keys, n)
		}
	}
	if keys != nil {
		if len(keys) == 1 {
			key = keys[0]
		}
		return ArgKey, "", key, 0, keys
	}
	if len(alts) == 1 && len(alts[0].Parts) == 1 && alts[0].Parts[0].Kind == PartArgv {
		return ArgArgv, "", 0, alts[0].Parts[0].N, nil
	}
	return ArgOther, "", 0, 0, nil
}

// describe names an argument for messages.
func (a *analyzer) describe(arg Arg, e ast.Expr, sc *scope) string {
	if id, ok := e.(*ast.IdentExpr); ok {
		if b := sc.lookup(id.Value); b != nil {
			d := "local " + id.Value
			if b.reassigned > 0 {
				d += fmt.Sprintf(" (assigned again at line %d)", b.reassigned)
			}
			return d
		}
	}
	switch arg.Kind {
	case ArgString:
		return fmt.Sprintf("%q", arg.Text)
	case ArgInteger:
		return arg.Text
	}
	if len(arg.Alts) == 1 {
		return arg.Alts[0].String()
	}
	switch e.(type) {
	case *ast.FuncCallExpr:
		return "a function's result"
	}
	return "an expression"
}

// spreadArg is the last argument of a call that expands to any number of values.
func (a *analyzer) spreadArg(sp *spread, exprs []ast.Expr, i int) Arg {
	out := Arg{Kind: ArgSpread, KeysFrom: sp.keysFrom}
	for _, x := range sp.v {
		switch x.kind {
		case aStr:
			out.Alts = append(out.Alts, x.str)
		case aData, aAny:
			out.Alts = append(out.Alts, Str{Parts: []Part{{Kind: PartValue, Origin: x.name}}})
		}
	}
	out.Desc = "an expansion"
	if i < len(exprs) {
		switch e := exprs[i].(type) {
		case *ast.Comma3Expr:
			out.Desc = "..."
		case *ast.FuncCallExpr:
			out.Desc = "a function call"
			if id, ok := e.Func.(*ast.IdentExpr); ok {
				out.Desc = id.Value + "(...)"
			} else if ag, ok := e.Func.(*ast.AttrGetExpr); ok {
				if lib, ok := ag.Object.(*ast.IdentExpr); ok {
					if k, ok := ag.Key.(*ast.StringExpr); ok {
						out.Desc = lib.Value + "." + k.Value + "(...)"
					}
				}
			}
		}
	}
	return out
}

// escapeMetamethods escapes what Lua may call implicitly on a table with the
// metatables mt: every __ field (and whatever was written under a key the
// reading cannot tell), but an __index that is a table, which is only read.
func (a *analyzer) escapeMetamethods(mt value, line int) {
	const to = "a metatable (its metamethods run where the reading cannot see)"
	for _, m := range mt {
		if m.kind != aTable {
			a.escape(one(m), to, line)
			continue
		}
		t := a.tables[m.id]
		a.escape(t.anyKey, to, line)
		for _, f := range sortedFields(t) {
			if !strings.HasPrefix(f, "__") {
				continue
			}
			v := t.fields[f]
			if f == "__index" {
				var fns value
				for _, x := range v {
					if x.kind != aTable {
						fns = append(fns, x)
					}
				}
				v = fns
			}
			a.escape(v, to, line)
		}
	}
}
