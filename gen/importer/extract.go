// Package importer brings existing Redis Lua scripts under luagen: it finds
// them (.lua files, or the string literals of redis.NewScript and
// rueidis.NewLuaScript calls in Go sources), reads each with the script reader,
// and drafts lua/<instance>/*.lua and a keyspec.yaml: KEYS and ARGV positions
// named from their use and comments, the commands called, value types guessed
// from them, the keys and channels the scripts build, and a TODO where only a
// person can decide (a pattern, a TTL, a placeholder's type, a reason).
// luagen generate then reports every TODO left as still open.
package importer

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// Script is one script found in the sources.
type Script struct {
	Name string // snake_case, from the file or the Go variable
	File string // where it was found: "a/b.lua" or "x.go:12"
	Src  []byte
	// NumKeys is the number of KEYS its caller passes when the source says
	// (redigo's NewScript(n, ...), BullMQ's name-N.lua), else -1.
	NumKeys int
	// Doc is the Go comment above the script's declaration, which often says
	// what its KEYS and ARGV are.
	Doc string
}

// scriptConstructors are the calls whose string argument is a script's source:
// go-redis redis.NewScript, redigo redis.NewScript(n, src), rueidis
// NewLuaScript and its read-only and no-SHA forms.
var scriptConstructors = map[string]bool{
	"NewScript": true, "NewLuaScript": true, "NewLuaScriptReadOnly": true,
	"NewLuaScriptNoSha": true, "NewLuaScriptReadOnlyNoSha": true,
}

// FromGo finds the scripts in the Go files of one package (all given at once,
// so a constant defined in one file and used in another resolves).
func FromGo(files map[string][]byte) ([]Script, error) {
	fset := token.NewFileSet()
	var parsed []*ast.File
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	consts := map[string]ast.Expr{}
	for _, n := range names {
		f, err := parser.ParseFile(fset, n, files[n], parser.ParseComments)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		parsed = append(parsed, f)
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || (g.Tok != token.CONST && g.Tok != token.VAR) {
				continue
			}
			for _, sp := range g.Specs {
				vs := sp.(*ast.ValueSpec)
				for i, id := range vs.Names {
					if i < len(vs.Values) {
						consts[id.Name] = vs.Values[i]
					}
				}
			}
		}
	}
	var out []Script
	seen := map[string]int{}
	for _, f := range parsed {
		// The name a script is assigned to: var enqueueCmd = redis.NewScript(...).
		owner := map[*ast.CallExpr]string{}
		docs := map[*ast.CallExpr]string{}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, sp := range g.Specs {
				vs, ok := sp.(*ast.ValueSpec)
				if !ok {
					continue
				}
				doc := vs.Doc
				if doc == nil {
					doc = g.Doc
				}
				for _, v := range vs.Values {
					if c, ok := v.(*ast.CallExpr); ok && doc != nil {
						docs[c] = doc.Text()
					}
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.ValueSpec:
				for i, v := range n.Values {
					if c, ok := v.(*ast.CallExpr); ok && i < len(n.Names) {
						owner[c] = n.Names[i].Name
					}
				}
			case *ast.AssignStmt:
				for i, v := range n.Rhs {
					if c, ok := v.(*ast.CallExpr); ok && i < len(n.Lhs) {
						owner[c] = exprName(n.Lhs[i])
					}
				}
			case *ast.KeyValueExpr:
				if c, ok := n.Value.(*ast.CallExpr); ok {
					owner[c] = exprName(n.Key)
				}
			case *ast.FuncDecl:
				// A script made inside a function is named after it,
				// unless assigned to a name of its own.
				ast.Inspect(n, func(m ast.Node) bool {
					if c, ok := m.(*ast.CallExpr); ok && owner[c] == "" {
						owner[c] = n.Name.Name
					}
					return true
				})
			}
			return true
		})
		ast.Inspect(f, func(n ast.Node) bool {
			c, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := c.Fun.(*ast.SelectorExpr)
			if !ok || !scriptConstructors[sel.Sel.Name] || len(c.Args) == 0 {
				return true
			}
			// The source is the string argument that calls Redis (redigo's
			// NewScript(n, src, hash) has two strings).
			src, srcArg := "", -1
			for i, arg := range c.Args {
				if v, ok := stringValue(arg, consts, 0); ok && strings.Contains(v, "redis.") && len(v) > len(src) {
					src, srcArg = v, i
				}
			}
			if srcArg < 0 {
				return true
			}
			keys := -1
			if srcArg > 0 {
				if lit, ok := c.Args[0].(*ast.BasicLit); ok && lit.Kind == token.INT {
					keys, _ = strconv.Atoi(lit.Value)
				}
			}
			pos := fset.Position(c.Pos())
			name := owner[c]
			if name == "" {
				if id, ok := c.Args[srcArg].(*ast.Ident); ok {
					name = id.Name
				}
			}
			name = scriptName(name)
			if name == "" {
				name = strings.TrimSuffix(filepath.Base(pos.Filename), ".go") + "_script"
			}
			if seen[name]++; seen[name] > 1 {
				name = fmt.Sprintf("%s_%d", name, seen[name])
			}
			out = append(out, Script{Name: name, File: fmt.Sprintf("%s:%d", pos.Filename, pos.Line), Src: []byte(src), NumKeys: keys, Doc: docs[c]})
			return true
		})
	}
	return out, nil
}

func exprName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return e.Sel.Name
	}
	return ""
}

// stringValue is the value of a constant string expression: a literal, a
// concatenation, or a constant of the package.
func stringValue(e ast.Expr, consts map[string]ast.Expr, depth int) (string, bool) {
	if depth > 16 {
		return "", false
	}
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(e.Value)
		return s, err == nil
	case *ast.BinaryExpr:
		if e.Op != token.ADD {
			return "", false
		}
		l, ok1 := stringValue(e.X, consts, depth+1)
		r, ok2 := stringValue(e.Y, consts, depth+1)
		return l + r, ok1 && ok2
	case *ast.ParenExpr:
		return stringValue(e.X, consts, depth+1)
	case *ast.Ident:
		if v, ok := consts[e.Name]; ok {
			return stringValue(v, consts, depth+1)
		}
	}
	return "", false
}

var numKeysSuffix = regexp.MustCompile(`^(.*?)-(\d+)$`)

// FromLua is a .lua file as a Script. A name ending in -N (BullMQ's
// moveToFinished-14.lua) says it takes N KEYS.
func FromLua(file string, src []byte) Script {
	base := strings.TrimSuffix(filepath.Base(file), ".lua")
	keys := -1
	if m := numKeysSuffix.FindStringSubmatch(base); m != nil {
		base = m[1]
		keys, _ = strconv.Atoi(m[2])
	}
	return Script{Name: scriptName(base), File: file, Src: src, NumKeys: keys}
}

// scriptName is a Go or file name in snake_case, without a Script/Cmd/Lua
// suffix: enqueueCmd -> enqueue, moveToFinished -> move_to_finished.
func scriptName(n string) string {
	for _, suffix := range []string{"Script", "Cmd", "Lua", "_script", "_cmd", "_lua"} {
		if len(n) > len(suffix) {
			n = strings.TrimSuffix(n, suffix)
		}
	}
	n = strings.TrimPrefix(strings.TrimPrefix(n, "redisLua"), "lua")
	var b strings.Builder
	prevLower := false
	for _, r := range n {
		switch {
		case unicode.IsUpper(r):
			if prevLower && b.Len() > 0 {
				b.WriteByte('_')
			}
			b.WriteRune(unicode.ToLower(r))
			prevLower = false
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(unicode.ToLower(r))
			prevLower = true
		default:
			if b.Len() > 0 && !strings.HasSuffix(b.String(), "_") {
				b.WriteByte('_')
			}
			prevLower = false
		}
	}
	s := strings.Trim(b.String(), "_")
	if s != "" && !(s[0] >= 'a' && s[0] <= 'z') {
		s = "s_" + s
	}
	return s
}

// Find reads the scripts under paths: .lua files, and the scripts of the Go
// files of each directory (a directory's Go files are one package). A path may
// be a file or a directory (walked; vendor/, node_modules/, testdata/ and
// _test.go files skipped).
func Find(paths []string) ([]Script, error) {
	var out []Script
	goDirs := map[string]map[string][]byte{}
	var dirOrder []string
	add := func(p string) error {
		switch {
		case strings.HasSuffix(p, ".lua"):
			src, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out = append(out, FromLua(p, src))
		case strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go"):
			src, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			d := filepath.Dir(p)
			if goDirs[d] == nil {
				goDirs[d] = map[string][]byte{}
				dirOrder = append(dirOrder, d)
			}
			goDirs[d][p] = src
		}
		return nil
	}
	for _, root := range paths {
		fi, err := os.Stat(root)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			if err := add(root); err != nil {
				return nil, err
			}
			continue
		}
		err = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				switch d.Name() {
				case "vendor", "node_modules", "testdata", ".git":
					if p != root {
						return filepath.SkipDir
					}
				}
				return nil
			}
			if d.Type()&os.ModeSymlink != 0 {
				return nil
			}
			return add(p)
		})
		if err != nil {
			return nil, err
		}
	}
	for _, d := range dirOrder {
		found, err := FromGo(goDirs[d])
		if err != nil {
			return nil, err
		}
		out = append(out, found...)
	}
	return out, nil
}
