package coverprofile

import (
	"bytes"
	"reflect"
	"strconv"

	"github.com/yuin/gopher-lua/ast"
	"github.com/yuin/gopher-lua/parse"

	"github.com/hanchat/luagen/gen/luascript"
)

// Instrument rewrites a parsed script (its chunk, shebang stripped) with a
// counter before each statement and at the start of each arm of each if (an
// absent else gets one too), keeping every statement's line, and returns it as
// `local <name> = ...; return function(...) <the script with counters> end`:
// called with a table of len(points) zeros, the chunk returns the script's
// function, whose counter i adds to the table's element i+1 (points[i]). It
// changes chunk.
func Instrument(chunk []ast.Stmt, name string) ([]ast.Stmt, []Point) {
	in := &instrumenter{name: name}
	return in.wrap(chunk), in.points
}

// PointsOf are the points Instrument finds in a script's source (shebang
// included), for a script no test ran.
func PointsOf(src []byte) ([]Point, error) {
	chunk, err := parse.Parse(bytes.NewReader(luascript.Body(src)), "script")
	if err != nil {
		return nil, err
	}
	_, points := Instrument(chunk, "_")
	return points, nil
}

// instrumenter rewrites a chunk with counters, keeping every statement's line.
type instrumenter struct {
	name   string
	points []Point
}

func (in *instrumenter) wrap(chunk []ast.Stmt) []ast.Stmt {
	body := in.function(chunk, 1)
	last := 1
	if n := len(chunk); n > 0 {
		last = max(chunk[n-1].LastLine(), chunk[n-1].Line())
	}
	fn := &ast.FunctionExpr{ParList: &ast.ParList{HasVargs: true}, Stmts: body}
	fn.SetLine(1)
	fn.SetLastLine(last)
	local := &ast.LocalAssignStmt{Names: []string{in.name}, Exprs: []ast.Expr{at(&ast.Comma3Expr{}, 1)}}
	local.SetLine(1)
	local.SetLastLine(1)
	ret := &ast.ReturnStmt{Exprs: []ast.Expr{fn}}
	ret.SetLine(last)
	ret.SetLastLine(last)
	return []ast.Stmt{local, ret}
}

func at[T ast.PositionHolder](n T, line int) T {
	n.SetLine(line)
	n.SetLastLine(line)
	return n
}

// counter is the statement `<name>[k] = <name>[k] + 1` at the point's line,
// for a new point k.
func (in *instrumenter) counter(p Point) ast.Stmt {
	in.points = append(in.points, p)
	k := strconv.Itoa(len(in.points))
	line := p.Line
	slot := func() ast.Expr {
		return at(&ast.AttrGetExpr{Object: at(&ast.IdentExpr{Value: in.name}, line), Key: at(&ast.NumberExpr{Value: k}, line)}, line)
	}
	s := &ast.AssignStmt{Lhs: []ast.Expr{slot()}, Rhs: []ast.Expr{at(&ast.ArithmeticOpExpr{Operator: "+", Lhs: slot(), Rhs: at(&ast.NumberExpr{Value: "1"}, line)}, line)}}
	return at(s, line)
}

// function is a function's body: a local alias of the counter table first
// (local <name> = <name>: its counters then take a register, not an upvalue),
// then the body with its counters.
func (in *instrumenter) function(stmts []ast.Stmt, line int) []ast.Stmt {
	alias := &ast.LocalAssignStmt{Names: []string{in.name}, Exprs: []ast.Expr{at(&ast.IdentExpr{Value: in.name}, line)}}
	return append([]ast.Stmt{at(alias, line)}, in.block(stmts)...)
}

// block is stmts with a counter before each statement (and the statements'
// own blocks and functions instrumented).
func (in *instrumenter) block(stmts []ast.Stmt) []ast.Stmt {
	out := make([]ast.Stmt, 0, 2*len(stmts))
	for _, s := range stmts {
		out = append(out, in.counter(Point{Line: s.Line(), Kind: Statement}))
		in.stmt(s)
		out = append(out, s)
	}
	return out
}

// arm is an if's arm: a branch counter, then the arm's statements. An arm
// with statements needs no counter of its own: its first statement's counts
// the same runs (nothing runs between the two), so its point reads that one
// (Same).
func (in *instrumenter) arm(stmts []ast.Stmt, ifLine int, arm string) []ast.Stmt {
	if len(stmts) > 0 {
		in.points = append(in.points, Point{Line: ifLine, Kind: Branch, Arm: arm, Same: len(in.points) + 2})
		return in.block(stmts)
	}
	c := in.counter(Point{Line: ifLine, Kind: Branch, Arm: arm})
	return []ast.Stmt{c}
}

func (in *instrumenter) stmt(s ast.Stmt) {
	switch s := s.(type) {
	case *ast.AssignStmt:
		in.exprs(s.Lhs)
		in.exprs(s.Rhs)
	case *ast.LocalAssignStmt:
		in.exprs(s.Exprs)
	case *ast.FuncCallStmt:
		in.expr(s.Expr)
	case *ast.DoBlockStmt:
		s.Stmts = in.block(s.Stmts)
	case *ast.WhileStmt:
		in.expr(s.Condition)
		s.Stmts = in.block(s.Stmts)
	case *ast.RepeatStmt:
		s.Stmts = in.block(s.Stmts)
		in.expr(s.Condition)
	case *ast.IfStmt:
		in.expr(s.Condition)
		s.Then = in.arm(s.Then, s.Line(), "then")
		if len(s.Else) == 1 {
			if _, elseif := s.Else[0].(*ast.IfStmt); elseif {
				// elseif: its own arms count; reaching it is its statement's count.
				s.Else = in.block(s.Else)
				return
			}
		}
		s.Else = in.arm(s.Else, s.Line(), "else")
	case *ast.NumberForStmt:
		in.expr(s.Init)
		in.expr(s.Limit)
		in.expr(s.Step)
		s.Stmts = in.block(s.Stmts)
	case *ast.GenericForStmt:
		in.exprs(s.Exprs)
		s.Stmts = in.block(s.Stmts)
	case *ast.FuncDefStmt:
		in.expr(s.Func)
	case *ast.ReturnStmt:
		in.exprs(s.Exprs)
	}
}

func (in *instrumenter) exprs(es []ast.Expr) {
	for _, e := range es {
		in.expr(e)
	}
}

// expr instruments the bodies of the functions inside e.
func (in *instrumenter) expr(e ast.Expr) {
	if f, ok := e.(*ast.FunctionExpr); ok {
		f.Stmts = in.function(f.Stmts, f.Line())
		return
	}
	in.exprs(subexpressions(e))
}

// subexpressions are the expressions directly inside e, in source order: the
// fields of its node that hold an ast.Expr or a list of them (an attribute's
// object and key, a call's function, receiver and arguments, the operands of
// an operator), and the keys and values of a table's fields.
func subexpressions(e ast.Expr) []ast.Expr {
	v := reflect.ValueOf(e)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return nil
	}
	v = v.Elem()
	var out []ast.Expr
	for i := range v.NumField() {
		if !v.Type().Field(i).IsExported() {
			continue
		}
		switch f := v.Field(i).Interface().(type) {
		case ast.Expr:
			out = append(out, f)
		case []ast.Expr:
			out = append(out, f...)
		case []*ast.Field:
			for _, tf := range f {
				out = append(out, tf.Key, tf.Value)
			}
		}
	}
	return out
}
