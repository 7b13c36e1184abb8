// The model: every decision about one instance's package (Go names, docs,
// checks, encodings, reply readers, what each file declares), as plain values
// that modelBuilder's methods build from the spec before any code is written.
// The emit* functions turn it into jennifer code and derive nothing.
//
// model_keys.go and model_builder.go build keys.go's model, model_acl.go and
// model_lua.go those of acl.go and lua.go, model_scripts.go the frame of
// scripts.go and model_script.go, model_args.go and model_reply.go each
// script's part of it; decls.go notes what each file declares.

package codegen

import (
	"errors"
	"fmt"
	"time"

	"github.com/hanchat/luagen/gen/keyspec"
)

// pkgModel is the Go package of one instance, file by file.
type pkgModel struct {
	Name    string // the package name: the instance's
	Keys    keysFile
	ACL     aclFile
	Scripts scriptsFile
	Lua     luaFile
}

// goType is a Go type as the generated code spells it: T or pkg.T, in a
// slice ([]T), behind a pointer (*T, *[]T for a nullable bytes field).
type goType struct {
	Name  string // "int64", "Duration", or a type of the package
	Pkg   string // the import path of a qualified name ("time"); "" for builtins and the package's own types
	Ptr   bool
	Slice bool
}

// named is a type of the generated package itself.
func named(name string) goType { return goType{Name: name} }

// literal is a constant the generated code writes: a string, an untyped
// integer, a duration (n * time.Unit) or a bool.
type literal struct {
	kind litKind
	s    string
	i    int64
	d    time.Duration
	b    bool
}

type litKind int

const (
	litString litKind = iota
	litInt
	litDuration
	litBool
)

func strLit(s string) literal        { return literal{kind: litString, s: s} }
func intLit(i int64) literal         { return literal{kind: litInt, i: i} }
func durLit(d time.Duration) literal { return literal{kind: litDuration, d: d} }
func boolLit(b bool) literal         { return literal{kind: litBool, b: b} }
func countLit[T ~int](n T) literal   { return intLit(int64(n)) }

// durOrZeroLit is a duration bound that may be absent: 0 is written 0.
func durOrZeroLit(d time.Duration) literal {
	if d == 0 {
		return intLit(0)
	}
	return durLit(d)
}

// constDef is one constant (or var) of a block: its doc, name, type when typed,
// and value.
type constDef struct {
	Doc   comment
	Name  string
	Type  string // "" untyped
	Value literal
}

// operand is a value generated code passes along: a local or parameter (ID),
// one of its fields (ID.Field), or, with no ID, the integer Int.
type operand struct {
	ID, Field string
	Int       int
}

// The files of a package, as the model and the errors name them.
const (
	fileACL     = "acl.go"
	fileKeys    = "keys.go"
	fileLua     = "lua.go"
	fileScripts = "scripts.go"
)

// build makes the model of instance in's package. A name collision is an error
// naming both sides: two spec names that become one Go name (reported alone
// when there are any), a parameter that shadows a local of the generated code.
func build(spec *keyspec.Spec, in *keyspec.Instance, scripts []Script) (*pkgModel, error) {
	b := newModelBuilder(spec, in, scripts)
	m := b.model()
	if err := b.decls.collisions(); err != nil {
		return nil, err
	}
	if len(b.errs) > 0 {
		return nil, errors.Join(b.errs...)
	}
	return m, nil
}

func newModelBuilder(spec *keyspec.Spec, in *keyspec.Instance, scripts []Script) *modelBuilder {
	return &modelBuilder{
		spec: spec, in: in, scripts: scripts, prefixed: in.Prefix != nil,
		decls: &declSet{pkg: in.Name, files: map[string][]string{}}, keyFuncs: map[string]*keyFunc{}, typesDeclared: map[string]bool{},
	}
}

// model builds every file's model, noting collisions in b.
func (b *modelBuilder) model() *pkgModel {
	return &pkgModel{Name: b.in.Name, Keys: b.keysFile(), ACL: b.aclFile(), Scripts: b.scriptsFile(), Lua: b.luaFile()}
}

// modelBuilder holds what building one package's model shares across its parts.
type modelBuilder struct {
	spec     *keyspec.Spec
	in       *keyspec.Instance
	scripts  []Script // sorted by name
	prefixed bool     // the instance has a deployment prefix
	decls    *declSet
	errs     []error // see errorf
	// keyFuncs are the functions that read a key out of a KEYS interface, by
	// the position's key types and shared placeholders: positions alike share one.
	keyFuncs map[string]*keyFunc
	// typesDeclared are the reply and element types a script already declared:
	// scripts sharing a type name share the type.
	typesDeclared map[string]bool
}

// errorf records an error of the model: a name that collides inside a
// generated function, an argument type without an encoding.
func (b *modelBuilder) errorf(format string, a ...any) {
	b.errs = append(b.errs, fmt.Errorf("codegen %s: "+format, append([]any{b.in.Name}, a...)...))
}
