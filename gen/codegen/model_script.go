// One script's model: its Go names, its runtime.Script (EVALSHA or a function,
// replay flags), its KEYS positions (a key type or an interface, the key
// functions positions alike share, the shared placeholder checks), its input
// function, and the wrapper and batch form.

package codegen

import (
	"fmt"
	"strings"

	"github.com/hanchat/luagen/gen/functions"
	"github.com/hanchat/luagen/gen/keyspec"
)

// scriptDecl is everything scripts.go declares for one script, in order.
type scriptDecl struct {
	Spec     string // the script's name in the spec
	Value    scriptValue
	Ifaces   []keyIface
	Args     *structDecl // <Script>Args; nil when the caller passes no ARGV
	Elems    []elemDecl  // list element types this script declares first, innermost first
	Result   *structDecl // the reply struct, when this script declares it first
	KeyFuncs []*keyFunc  // key functions this script's positions need first
	Input    inputFunc
	Decode   decodeFunc
	Wrapper  wrapperDecl
}

// scriptValue is <Script>Script, the runtime.Script the wrappers run.
type scriptValue struct {
	Doc    comment
	Var    string
	Name   string // the script's name in the spec
	Source string // lua.go's constants
	SHA1   string
	Mode   scriptMode
	// Function is the library function a modeFunction script runs as.
	Function string
	ReadOnly bool
	Options  []string // runtime options: ReplaySafe, StringArgs
}

// scriptMode is how a script reaches Redis.
type scriptMode int

const (
	modeEvalSHA  scriptMode = iota // EVALSHA with SCRIPT LOAD on NOSCRIPT: runtime.MustScript
	modeFunction                   // FCALL of a function of the instance's library: runtime.MustFunction
)

// keyIface is the interface of a KEYS position that takes several key types,
// and the marker method each of them gets.
type keyIface struct {
	Doc      comment
	Type     string
	Marker   string
	KeyTypes []string
}

// keyPosition is one KEYS position: the wrapper's parameter and how the input
// function reads the key from it.
type keyPosition struct {
	Spec     string // the position's name, which a refusal names
	Param    string
	Type     string             // the parameter's type: the key type, or Iface's
	Iface    *keyIface          // the interface of a position that takes several key types
	Func     *keyFunc           // the function that reads the key out of Iface
	Into     []string           // the locals Func returns into: name, prefix, segments
	Name     operand            // the key's name
	Prefix   operand            // the prefix it was built with (prefixed instances)
	segments map[string]operand // the segment of each shared placeholder it has
	newFunc  bool               // Func is new here: this script writes it
}

// keyFunc reads the key out of a KEYS interface, accepting only the declared
// key types themselves: not a nil interface, not a pointer to one, not another
// package's type that embeds one and overrides String.
type keyFunc struct {
	Doc      comment
	Name     string
	Prefixed bool // also returns the prefix
	Segments int  // then the segment of each shared placeholder
	Cases    []keyCase
}

// keyCase is one accepted key type and its shared placeholders' segments.
type keyCase struct {
	Type     string
	Segments []int
}

// sameCheck is in.Same: two positions hold one value of a shared placeholder.
type sameCheck struct {
	Placeholder string
	A, ASeg     operand
	B, BSeg     operand
}

// inputFunc is <script>Input: each key and argument, one runtime.Input call each.
type inputFunc struct {
	Name     string
	Script   string // the runtime.Script it starts from
	Prefixed bool   // takes the prefix and starts with PrefixedInput
	NKeys    int
	NArgv    int
	Keys     []keyPosition
	ArgsType string // "" when the caller passes no ARGV
	Same     []sameCheck
	Args     []argModel
}

// wrapperDecl is Scripts.<Script> and Queue<Script>.
type wrapperDecl struct {
	Doc      comment
	Method   string
	DB       string // the Scripts field it runs on
	Keys     []keyPosition
	ArgsType string // "" when the caller passes no ARGV
	Result   goType
	Input    string
	Decode   string
	Prefixed bool // passes s.prefix; Queue<Script> is a method of Scripts
	QueueDoc comment
	Queue    string
}

// wrapperLocals are the names a generated wrapper, its batch form and its input
// function use besides the key parameters.
var wrapperLocals = map[string]bool{"ctx": true, "s": true, "b": true, "a": true, "args": true, "in": true, "prefix": true, "k": true}

func (b *modelBuilder) script(sc Script) scriptDecl {
	s := sc.Spec
	base, lname := exported(s.Name), unexported(s.Name)
	d := scriptDecl{Spec: s.Name, Value: b.scriptValue(sc)}
	b.decls.add(fileScripts, d.Value.Var)
	keys := b.keyPositions(s)
	for _, k := range keys {
		if k.Iface != nil {
			d.Ifaces = append(d.Ifaces, *k.Iface)
			b.decls.add(fileScripts, k.Iface.Type)
			for _, t := range k.Iface.KeyTypes {
				b.decls.add(fileScripts, t+"."+k.Iface.Marker)
			}
		}
	}
	args, fields := b.args(s)
	if len(fields) > 0 {
		d.Args = &structDecl{Doc: wrapped(fmt.Sprintf("%sArgs are the ARGV of %s.", base, base)), Name: base + "Args", Fields: fields}
		b.decls.add(fileScripts, d.Args.Name)
	}
	d.Elems = b.elemDecls(s.Reply.All(), replyOwner(s), s.Name)
	d.Result = b.resultDecl(s)
	for _, k := range keys {
		if k.newFunc {
			d.KeyFuncs = append(d.KeyFuncs, k.Func)
			b.decls.add(fileScripts, k.Func.Name)
		}
	}
	d.Input = inputFunc{
		Name: lname + "Input", Script: d.Value.Var, Prefixed: b.prefixed,
		NKeys: len(keys), NArgv: len(s.Argv), Keys: keys, Same: sameChecks(s.SharedPlaceholders, keys), Args: args,
	}
	if d.Args != nil {
		d.Input.ArgsType = d.Args.Name
	}
	result := resultType(s)
	d.Decode = b.decodeFunc(s, result)
	b.decls.add(fileScripts, d.Input.Name, d.Decode.Name)
	d.Wrapper = b.wrapper(s, keys, d.Input, result)
	return d
}

func (b *modelBuilder) scriptValue(sc Script) scriptValue {
	s := sc.Spec
	base := exported(s.Name)
	v := scriptValue{Var: base + "Script", Name: s.Name, Source: unexported(s.Name) + "Source", SHA1: base + "SHA1", ReadOnly: s.ReadOnly}
	if s.ReplaySafe != "" {
		v.Options = append(v.Options, "ReplaySafe")
	}
	if b.in.Client == keyspec.ClientRueidis {
		// rueidis sends strings: the Input keeps them (runtime.StringArgs).
		v.Options = append(v.Options, "StringArgs")
	}
	if b.in.Functions() {
		v.Mode, v.Function = modeFunction, functions.FunctionName(s, sc.SHA1)
		call := "FCALL"
		if s.ReadOnly {
			call = "FCALL_RO"
		}
		v.Doc = wrapped(fmt.Sprintf("%sScript is lua/%s, run as function %s of Library (%s).", base, s.LuaFile(), v.Function, call))
		return v
	}
	ro := ""
	switch {
	case s.ReadOnly:
		ro = ", read-only (EVALSHA_RO)"
	case s.ReplaySafe != "":
		ro = ", safe to replay: " + strings.TrimSuffix(s.ReplaySafe, ".")
	}
	v.Doc = wrapped(fmt.Sprintf("%sScript is lua/%s%s.", base, s.LuaFile(), ro))
	return v
}

// keyIface is the interface of KEYS position i, k, of s.
func keyIfaceOf(s *keyspec.Script, i int, k *keyspec.ScriptKey) *keyIface {
	ki := &keyIface{Type: exported(s.Name) + exported(k.Name), Marker: unexported(s.Name) + exported(k.Name)}
	for _, kk := range k.OneOf {
		ki.KeyTypes = append(ki.KeyTypes, keyTypeName(kk))
	}
	ki.Doc = wrapped(fmt.Sprintf("%s is a key %s takes as KEYS[%d] (%s): %s.", ki.Type, s.Name, i+1, k.Name, strings.Join(ki.KeyTypes, ", ")))
	return ki
}

// keyPositions are s's KEYS positions: a parameter of the key type when the
// position takes one, else of its interface, read by a key function that
// positions taking the same key types and shared placeholders share.
func (b *modelBuilder) keyPositions(s *keyspec.Script) []keyPosition {
	var out []keyPosition
	for i, k := range s.Keys {
		kp := keyPosition{Spec: k.Name, Param: unexported(k.Name), segments: map[string]operand{}}
		if wrapperLocals[kp.Param] {
			b.errorf("script %s: key %s: its Go parameter %q is a name the generated wrapper uses itself; rename the key", s.Name, kp.Param, kp.Param)
		}
		if len(k.OneOf) == 1 {
			// A key type of this package: its name is its unexported field.
			kp.Type = keyTypeName(k.OneOf[0])
			kp.Name, kp.Prefix = operand{ID: kp.Param, Field: "key"}, operand{ID: kp.Param, Field: "p"}
			for _, ph := range s.SharedPlaceholders {
				if idx := k.OneOf[0].Pattern.Index(ph); idx >= 0 {
					kp.segments[ph] = operand{Int: idx}
				}
			}
		} else {
			kp.Iface = keyIfaceOf(s, i, k)
			kp.Type = kp.Iface.Type
			b.readThroughFunc(&kp, s, k)
		}
		out = append(out, kp)
	}
	return out
}

// readThroughFunc makes kp, a position of several key types, read its key with
// a key function: the one positions alike already share, or a new one.
func (b *modelBuilder) readThroughFunc(kp *keyPosition, s *keyspec.Script, k *keyspec.ScriptKey) {
	local := kp.Param + "Name"
	kp.Into = []string{local}
	kp.Name = operand{ID: local}
	if b.prefixed {
		kp.Into = append(kp.Into, kp.Param+"Prefix")
		kp.Prefix = operand{ID: kp.Param + "Prefix"}
	}
	var phs []string
	for _, ph := range s.SharedPlaceholders {
		if k.OneOf[0].Pattern.Index(ph) >= 0 {
			phs = append(phs, ph)
			v := kp.Param + "At" + exported(ph)
			kp.Into = append(kp.Into, v)
			kp.segments[ph] = operand{ID: v}
		}
	}
	names := kp.Iface.KeyTypes
	sig := strings.Join(names, ",") + "|" + strings.Join(phs, ",")
	if f, ok := b.keyFuncs[sig]; ok {
		kp.Func = f
		return
	}
	f := &keyFunc{Name: unexported(s.Name) + exported(k.Name) + "Key", Prefixed: b.prefixed, Segments: len(phs)}
	for _, kk := range k.OneOf {
		c := keyCase{Type: keyTypeName(kk)}
		for _, ph := range phs {
			c.Segments = append(c.Segments, kk.Pattern.Index(ph))
		}
		f.Cases = append(f.Cases, c)
	}
	what := "the key k holds"
	if len(phs) > 0 {
		what = "the key k holds (its prefix, the segments of " + strings.Join(phs, ", ") + ")"
	}
	if b.prefixed && len(phs) == 0 {
		what = "the key k holds and its prefix"
	}
	f.Doc = wrapped(fmt.Sprintf("%s is %s when k is one of %s itself, else the zero value (nil, a pointer, a type embedding one).", f.Name, what, strings.Join(names, ", ")))
	b.keyFuncs[sig] = f
	kp.Func, kp.newFunc = f, true
}

// sameChecks tie the positions holding a shared placeholder: each holds the
// value of the first that has it.
func sameChecks(shared []string, keys []keyPosition) []sameCheck {
	var out []sameCheck
	for _, ph := range shared {
		first := -1
		for i := range keys {
			seg, ok := keys[i].segments[ph]
			if !ok {
				continue
			}
			if first < 0 {
				first = i
				continue
			}
			out = append(out, sameCheck{Placeholder: ph, A: keys[first].Name, ASeg: keys[first].segments[ph], B: keys[i].Name, BSeg: seg})
		}
	}
	return out
}

func (b *modelBuilder) wrapper(s *keyspec.Script, keys []keyPosition, in inputFunc, result goType) wrapperDecl {
	base := exported(s.Name)
	docs := []string{fmt.Sprintf("%s runs %s on %s. %s", base, s.Name, s.DB.Name, s.Doc)}
	if len(s.Errors) > 0 {
		var errs []string
		for _, e := range s.Errors {
			d := lowerFirst(strings.TrimSpace(sentence(e.Doc)))
			if d == "" {
				d = "declared."
			}
			errs = append(errs, errorVarName(e.Code)+": "+d)
		}
		docs = append(docs, "Error replies. "+strings.Join(errs, " "))
	}
	w := wrapperDecl{
		Doc: wrapped(docs...), Method: base, DB: unexported(s.DB.Name), Keys: keys, ArgsType: in.ArgsType,
		Result: result, Input: in.Name, Decode: "decode" + base, Prefixed: b.prefixed,
		QueueDoc: wrapped(fmt.Sprintf("Queue%s is %s in a batch, run on a client of %s.", base, base, s.DB.Name)),
		Queue:    "Queue" + base,
	}
	b.decls.add(fileScripts, "Scripts."+w.Method)
	if b.prefixed {
		b.decls.add(fileScripts, "Scripts."+w.Queue)
	} else {
		b.decls.add(fileScripts, w.Queue)
	}
	return w
}
