// One script's model: its Go names, its runtime.Script (EVALSHA or a function,
// replay flags), its KEYS positions (a key type or an interface, the key
// functions positions alike share, the shared placeholder checks), its input
// function, and the wrapper and batch form.

package codegen

import (
	"fmt"
	"slices"
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
	// Shapes are the wrappers of a reply chosen by an argument, one per
	// shape, each with its types and decoder; Elems, Result, Decode and
	// Wrapper are then unused.
	Shapes []shapeDecl
}

// shapeDecl is one shape of a reply chosen by an argument: its types, its
// decoder and its wrapper, which sends Value for the argument.
type shapeDecl struct {
	Elems   []elemDecl
	Result  *structDecl
	Decode  decodeFunc
	Wrapper wrapperDecl
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
	Type     string             // the parameter's type: the key type, Iface's, or the channel type; a slice of it with Repeat
	Iface    *keyIface          // the interface of a position that takes several key types
	Func     *keyFunc           // the function that reads the key out of Iface
	Into     []string           // the locals Func returns into: name, prefix, segments
	Name     operand            // the key's name
	Prefix   operand            // the prefix it was built with (prefixed instances)
	segments map[string]operand // the segment of each shared placeholder it has (simple patterns)
	parts    map[string]partRef // where each shared placeholder it has is in its key's name
	newFunc  bool               // Func is new here: this script writes it
	// Repeat is set for a trailing repeating position: the parameter is a
	// slice, and each element is passed (Elem is the loop's element).
	Repeat *keyspec.Repeat
	// Channel: the position passes a channel's name (Name is its name field).
	Channel bool
}

// elemVar is the loop variable over a repeating position's elements.
const elemVar = "k"

// partRef is where one placeholder's value is in a key's name: the pattern's
// literal runs and the placeholder's index (runtime.KeyPart).
type partRef struct {
	Lits  []string
	Index int
}

// partRefOf is where placeholder ph is in names of pat.
func partRefOf(pat keyspec.Pattern, ph string) (partRef, bool) {
	r := partRef{Lits: []string{""}, Index: -1}
	for _, pt := range pat.Parts {
		if pt.Param == nil {
			r.Lits[len(r.Lits)-1] += pt.Literal
			continue
		}
		if pt.Param.Name == ph {
			r.Index = len(r.Lits) - 1
		}
		r.Lits = append(r.Lits, "")
	}
	return r, r.Index >= 0
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

// sameCheck is in.Same: two positions hold one value of a shared placeholder;
// in.SamePart when a key's pattern is not simple (APart, BPart set).
type sameCheck struct {
	Placeholder  string
	A, ASeg      operand
	B, BSeg      operand
	APart, BPart *partRef
	// InLoop: B is the element of the repeating position's loop (A is the
	// position's first element when it is the first to hold the placeholder).
	InLoop bool
}

// inputFunc is <script>Input: each key and argument, one runtime.Input call each.
type inputFunc struct {
	Name     string
	Script   string // the runtime.Script it starts from
	Prefixed bool   // takes the prefix and starts with PrefixedInput
	NKeys    int    // the fixed KEYS positions
	NArgv    int    // the fixed ARGV positions
	// KeysRepeat and ArgvRepeat are the repeating KEYS parameter and ARGV
	// field, whose lengths add to NKeys and NArgv; "" when none repeats.
	KeysRepeat string
	ArgvRepeat string
	// Shape is the parameter that takes the value of the argument choosing the
	// reply's shape (by_arg); "" without one.
	Shape    string
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
	Shape    *string // the value it sends for the argument choosing the reply's shape
}

// wrapperLocals are the names a generated wrapper, its batch form and its input
// function use besides the key parameters.
var wrapperLocals = map[string]bool{"ctx": true, "s": true, "b": true, "a": true, "args": true, "in": true, "prefix": true, "k": true}

// WrapperLocal reports whether a KEYS position named name would become a Go
// parameter that a generated wrapper's own locals shadow (ctx, prefix, ...):
// generate refuses such a name, and luagen import drafts another.
func WrapperLocal(name string) bool { return wrapperLocals[unexported(name)] }

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
	if s.Reply.ByArg == nil {
		d.Elems = b.elemDecls(s.Reply.All(), replyOwner(s), s.Name)
		d.Result = b.resultDecl(s)
	}
	for _, k := range keys {
		if k.newFunc {
			d.KeyFuncs = append(d.KeyFuncs, k.Func)
			b.decls.add(fileScripts, k.Func.Name)
		}
	}
	d.Input = inputFunc{
		Name: lname + "Input", Script: d.Value.Var, Prefixed: b.prefixed,
		NKeys: len(keys), NArgv: len(s.Argv), Keys: keys, Same: sameChecks(s.SharedPlaceholders, append(slices.Clip(keys), argKeyPositions(s, args)...)), Args: args,
	}
	if last := len(keys) - 1; last >= 0 && keys[last].Repeat != nil {
		d.Input.NKeys, d.Input.KeysRepeat = last, keys[last].Param
	}
	if last := len(args) - 1; last >= 0 && args[last].Repeat != nil {
		d.Input.NArgv, d.Input.ArgvRepeat = last, args[last].Field
	}
	if d.Args != nil {
		d.Input.ArgsType = d.Args.Name
	}
	if s.Reply.ByArg != nil {
		d.Input.Shape = shapeParam
		b.decls.add(fileScripts, d.Input.Name)
		for _, sh := range s.Reply.Shapes {
			d.Shapes = append(d.Shapes, b.shape(s, sh, keys, d.Input))
		}
		return d
	}
	result := resultType(s)
	d.Decode = b.decodeFunc(s, result)
	b.decls.add(fileScripts, d.Input.Name, d.Decode.Name)
	d.Wrapper = b.wrapper(s, keys, d.Input, result)
	return d
}

// shape models the wrapper of one shape of s's reply: a script of the
// shape's name (<script>_<value>) and reply, sending value for by_arg.
func (b *modelBuilder) shape(s *keyspec.Script, sh *keyspec.ReplyShape, keys []keyPosition, in inputFunc) shapeDecl {
	shaped := *s
	shaped.Name, shaped.Reply = s.Name+"_"+sh.Value, sh.Reply
	d := shapeDecl{Elems: b.elemDecls(sh.Reply.All(), replyOwner(&shaped), shaped.Name), Result: b.resultDecl(&shaped)}
	result := resultType(&shaped)
	d.Decode = b.decodeFunc(&shaped, result)
	d.Decode.Script = exported(s.Name) + "Script"
	b.decls.add(fileScripts, d.Decode.Name)
	shaped.Doc = fmt.Sprintf("with %s %q: its reply is then %s. %s", s.Reply.ByArg.Name, sh.Value, replyShapeText(sh.Reply), s.Doc)
	w := b.wrapper(&shaped, keys, in, result)
	w.Doc = wrapped(strings.Replace(strings.Join(w.Doc, " "), "runs "+shaped.Name+" on", "runs "+s.Name+" on", 1))
	value := sh.Value
	w.Shape = &value
	d.Wrapper = w
	return d
}

// replyShapeText says what a reply shape is, for the wrapper's doc.
func replyShapeText(r keyspec.Reply) string {
	if r.Value != nil {
		return fmt.Sprintf("%s (%s)", r.Value.Name, r.Value.Type)
	}
	var names []string
	for _, f := range r.Fields {
		names = append(names, f.Name)
	}
	return "{" + strings.Join(names, ", ") + "}"
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
		kp := keyPosition{Spec: k.Name, Param: unexported(k.Name), segments: map[string]operand{}, parts: map[string]partRef{}, Repeat: k.Repeat}
		if wrapperLocals[kp.Param] {
			b.errorf("script %s: key %s: its Go parameter %q is a name the generated wrapper uses itself; rename the key", s.Name, kp.Param, kp.Param)
		}
		holder := kp.Param // what holds the key: the parameter, or the loop's element
		if k.Repeat != nil {
			holder = elemVar
		}
		switch {
		case k.Channel != nil:
			kp.Type, kp.Channel = exported(k.Channel.Name)+"Channel", true
			kp.Name = operand{ID: holder, Field: "name"}
		case len(k.OneOf) == 1:
			// A key type of this package: its name is its unexported field.
			kp.Type = keyTypeName(k.OneOf[0])
			kp.Name, kp.Prefix = operand{ID: holder, Field: "key"}, operand{ID: holder, Field: "p"}
			pat := k.OneOf[0].Pattern
			for _, ph := range s.SharedPlaceholders {
				if idx := pat.Index(ph); idx >= 0 {
					kp.segments[ph] = operand{Int: idx}
				}
				if r, ok := partRefOf(pat, ph); ok {
					kp.parts[ph] = r
				}
			}
		default:
			kp.Iface = keyIfaceOf(s, i, k)
			kp.Type = kp.Iface.Type
			b.readThroughFunc(&kp, s, k, holder)
		}
		out = append(out, kp)
	}
	return out
}

// readThroughFunc makes kp, a position of several key types, read its key with
// a key function: the one positions alike already share, or a new one.
func (b *modelBuilder) readThroughFunc(kp *keyPosition, s *keyspec.Script, k *keyspec.ScriptKey, holder string) {
	local := holder + "Name"
	kp.Into = []string{local}
	kp.Name = operand{ID: local}
	if b.prefixed {
		kp.Into = append(kp.Into, holder+"Prefix")
		kp.Prefix = operand{ID: holder + "Prefix"}
	}
	var phs []string
	for _, ph := range s.SharedPlaceholders {
		if !k.OneOf[0].Pattern.Has(ph) {
			continue
		}
		for _, kk := range k.OneOf {
			if kk.Pattern.Index(ph) < 0 {
				b.errorf("script %s: KEYS %s: shared placeholder {%s} in key %s, whose pattern is not one of whole segments: a position of several key types compares shared placeholders by segment; give the position one key type", s.Name, k.Name, ph, kk.Name)
			}
		}
		if k.Repeat != nil {
			b.errorf("script %s: KEYS %s: a repeating position of several key types with shared placeholder {%s}: give the position one key type", s.Name, k.Name, ph)
		}
		phs = append(phs, ph)
		v := holder + "At" + exported(ph)
		kp.Into = append(kp.Into, v)
		kp.segments[ph] = operand{ID: v}
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

// argKeyPositions are s's ARGV of type key as the shared placeholder checks
// read them (the Args field's key): a shared placeholder in such a key holds
// the KEYS' value, so on a cluster the names built from it share their slot.
func argKeyPositions(s *keyspec.Script, args []argModel) []keyPosition {
	var out []keyPosition
	for _, am := range args {
		a := s.ArgAt(am.Index)
		if a == nil || a.Key == nil || am.Field == "" || am.Repeat != nil {
			continue
		}
		kp := keyPosition{Spec: a.Name, Name: operand{ID: "a." + am.Field, Field: "key"}, segments: map[string]operand{}, parts: map[string]partRef{}}
		pat := a.Key.Pattern
		for _, ph := range s.SharedPlaceholders {
			if idx := pat.Index(ph); idx >= 0 {
				kp.segments[ph] = operand{Int: idx}
			}
			if r, ok := partRefOf(pat, ph); ok {
				kp.parts[ph] = r
			}
		}
		out = append(out, kp)
	}
	return out
}

// sameChecks tie the positions holding a shared placeholder: each holds the
// value of the first that has it.
func sameChecks(shared []string, keys []keyPosition) []sameCheck {
	var out []sameCheck
	has := func(k keyPosition, ph string) bool {
		_, seg := k.segments[ph]
		_, part := k.parts[ph]
		return seg || part
	}
	for _, ph := range shared {
		first := -1
		for i, k := range keys {
			if !has(k, ph) {
				continue
			}
			if first < 0 {
				first = i
				if k.Repeat == nil {
					continue
				}
			}
			a := keys[first]
			c := sameCheck{Placeholder: ph, A: a.Name, ASeg: a.segments[ph], B: k.Name, BSeg: k.segments[ph], InLoop: k.Repeat != nil}
			if first == i {
				// The repeating position holds it first: every element holds its first element's value.
				c.A = operand{ID: a.Param + "[0]", Field: a.Name.Field}
			}
			_, simpleA := a.segments[ph]
			_, simpleB := k.segments[ph]
			if !simpleA || !simpleB {
				pa, pb := a.parts[ph], k.parts[ph]
				c.APart, c.BPart = &pa, &pb
			}
			out = append(out, c)
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
