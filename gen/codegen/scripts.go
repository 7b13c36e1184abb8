package codegen

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/dave/jennifer/jen"
	"github.com/hanchat/luagen/gen/functions"
	"github.com/hanchat/luagen/gen/keyspec"
)

// ---- scripts.go ----

func (g *gen) scriptsFile() *jen.File {
	f := g.newFile()
	dbs := g.in.LiveDBs()

	rueidis := g.in.Client == keyspec.ClientRueidis
	var fields []jen.Code
	for _, d := range dbs {
		t := jen.Qual(redisPkg, "Scripter")
		if rueidis {
			t = jen.Op("*").Qual(rueidisPkg, "Conn")
		}
		fields = append(fields, jen.Comment(fmt.Sprintf("%s is a client of %s (db %d, %s).", exported(d.Name), d.ID(), d.Index, d.URLEnv)), jen.Id(exported(d.Name)).Add(t))
	}
	fields = append(fields, doc("Observer, when set, sees every call the wrappers send (runtime/scriptmetrics exports them to Prometheus); nil measures nothing."), jen.Id("Observer").Qual(runtimePkg, "Observer"))
	if rueidis {
		f.Add(doc(fmt.Sprintf("Clients holds one client per database of %s the scripts run in: rueidis clients (the spec's client: rueidis) checked by rueidisbackend.New. A client may be nil when no script of its database is called.", g.in.Name)))
	} else {
		f.Add(doc(fmt.Sprintf("Clients holds one client per database of %s the scripts run in. A client may be nil when no script of its database is called.", g.in.Name)))
	}
	f.Type().Id("Clients").Struct(fields...)
	f.Line()
	prefixed := g.in.Prefix != nil
	var sfields []jen.Code
	for _, d := range dbs {
		sfields = append(sfields, jen.Id(unexported(d.Name)).Qual(runtimePkg, "DB"))
	}
	if prefixed {
		sfields = append(sfields, jen.Id("prefix").String())
	}
	f.Add(doc(fmt.Sprintf("Scripts runs the Lua scripts of %s through typed wrappers. It is safe for concurrent use.", g.in.Name)))
	f.Type().Id("Scripts").Struct(sfields...)
	f.Line()
	if prefixed {
		f.Comment("Option configures NewScripts.")
		f.Type().Id("Option").Func().Params(jen.Op("*").Id("Scripts"))
		f.Line()
		f.Add(doc("WithPrefix binds the Scripts to deployment p: its wrappers take only keys built with p."))
		f.Func().Id("WithPrefix").Params(jen.Id("p").Id("Prefix")).Id("Option").Block(
			jen.Return(jen.Func().Params(jen.Id("s").Op("*").Id("Scripts")).Block(jen.Id("s").Dot("prefix").Op("=").Id("p").Dot("s"))),
		)
		f.Line()
	}

	var checks []jen.Code
	checks = append(checks, jen.Id("s").Op(":=").Op("&").Id("Scripts").Values(), jen.Var().Err().Error())
	if prefixed {
		checks = append(checks,
			jen.For(jen.List(jen.Id("_"), jen.Id("o")).Op(":=").Range().Id("opts")).Block(jen.Id("o").Call(jen.Id("s"))),
			jen.If(jen.Id("s").Dot("prefix").Op("==").Lit("")).Block(jen.Return(jen.Nil(), jen.Qual("fmt", "Errorf").Call(jen.Lit(g.in.Name+": NewScripts needs WithPrefix: every key of "+g.in.Name+" starts with a deployment prefix: %w"), jen.Qual(runtimePkg, "ErrInvalidPrefix")))),
		)
	}
	for _, d := range dbs {
		n := exported(d.Name)
		bind := jen.Qual(runtimePkg, "Bind")
		if rueidis {
			bind = jen.Qual(rueidisPkg, "Bind")
		}
		checks = append(checks, jen.If(
			jen.List(jen.Id("s").Dot(unexported(d.Name)), jen.Err()).Op("=").Add(bind).Call(jen.Id("c").Dot(n), jen.Lit(g.in.Name+" "+d.Name), jen.Id(n), jen.Id("c").Dot("Observer")),
			jen.Err().Op("!=").Nil(),
		).Block(jen.Return(jen.Nil(), jen.Err())))
	}
	checks = append(checks, jen.Return(jen.Id("s"), jen.Nil()))
	if prefixed {
		f.Add(doc("NewScripts checks that each client selects its database, where the client can tell (a *redis.Client or *redis.Ring), so a script never runs in the wrong one, and binds the Scripts to the deployment prefix WithPrefix names (required)."))
		f.Func().Id("NewScripts").Params(jen.Id("c").Id("Clients"), jen.Id("opts").Op("...").Id("Option")).Params(jen.Op("*").Id("Scripts"), jen.Error()).Block(checks...)
	} else {
		if rueidis {
			f.Add(doc("NewScripts checks that each client selects its database, so a script never runs in the wrong one."))
		} else {
			f.Add(doc("NewScripts checks that each client selects its database, where the client can tell (a *redis.Client or *redis.Ring), so a script never runs in the wrong one."))
		}
		f.Func().Id("NewScripts").Params(jen.Id("c").Id("Clients")).Params(jen.Op("*").Id("Scripts"), jen.Error()).Block(checks...)
	}
	f.Line()

	var all []jen.Code
	for _, s := range g.scripts {
		all = append(all, jen.Line().Id(exported(s.Spec.Name)+"Script"))
	}
	all = append(all, jen.Line())
	if g.in.Functions() {
		f.Add(doc(fmt.Sprintf("AllScripts lists every script of %s. They run as functions of Library, which the deploy step loads (runtime.LoadLibrary, luagen load --instance %s); runtime.Preload refuses them.", g.in.Name, g.in.Name)))
	} else if g.in.Split() {
		f.Add(doc(fmt.Sprintf("AllScripts lists every script of %s, e.g. for runtime.Preload. The script cache is per server and %s is split over servers (its own and %s): preload on a client of each.", g.in.Name, g.in.Name, strings.Join(g.in.ServerNames()[1:], ", "))))
	} else {
		f.Add(doc(fmt.Sprintf("AllScripts lists every script of %s, e.g. for runtime.Preload. The script cache is per server, so one Preload covers every database.", g.in.Name)))
	}
	f.Func().Id("AllScripts").Params().Index().Op("*").Qual(runtimePkg, "Script").Block(
		jen.Return(jen.Index().Op("*").Qual(runtimePkg, "Script").Values(all...)),
	)
	f.Line()

	g.errorCodes(f)
	for _, s := range g.scripts {
		g.script(f, s)
	}
	return f
}

// errorCodes declares one runtime.ErrorCode per distinct declared error code.
func (g *gen) errorCodes(f *jen.File) {
	users := map[string][]string{}
	docs := map[string][]string{}
	for _, s := range g.scripts {
		for _, e := range s.Spec.Errors {
			users[e.Code] = append(users[e.Code], s.Spec.Name)
			d := sentence(e.Doc)
			if !slices.Contains(docs[e.Code], d) {
				docs[e.Code] = append(docs[e.Code], d)
			}
		}
	}
	codes := make([]string, 0, len(users))
	for c := range users {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	if len(codes) == 0 {
		return
	}
	var defs []jen.Code
	for _, c := range codes {
		defs = append(defs,
			doc(errDoc(c, users[c], docs[c])),
			jen.Id("Err"+exported(strings.ToLower(c))).Op("=").Qual(runtimePkg, "ErrorCode").Call(jen.Lit(c)),
		)
	}
	f.Var().Defs(defs...)
	f.Line()
}

// errDoc is the doc of an error code: the sentence of the one script that
// declares it, or where to read what it means when several do.
func errDoc(code string, users, docs []string) string {
	name := "Err" + exported(strings.ToLower(code))
	if len(docs) == 1 {
		if d := strings.TrimSpace(docs[0]); d != "" {
			return fmt.Sprintf("%s is the error reply %s of %s: %s", name, code, strings.Join(users, ", "), lowerFirst(d))
		}
		return fmt.Sprintf("%s is the error reply %s of %s.", name, code, strings.Join(users, ", "))
	}
	return fmt.Sprintf("%s is the error reply %s, declared by %d scripts; the method of each says what it means there.", name, code, len(users))
}

// wrapperLocals are the names a generated wrapper, its batch form and its input
// function use besides the key parameters.
var wrapperLocals = map[string]bool{"ctx": true, "s": true, "b": true, "a": true, "args": true, "in": true, "prefix": true, "k": true}

// lowerFirst lower-cases the first letter of a sentence that goes after a
// colon, unless the first word is an acronym (JWKS, TTL).
func lowerFirst(s string) string {
	if len(s) < 2 || s[0] < 'A' || s[0] > 'Z' || s[1] < 'a' || s[1] > 'z' {
		return s
	}
	return string(s[0]+'a'-'A') + s[1:]
}

// keyParam is how a wrapper takes one KEYS position: the key type itself when the
// position accepts one key, else an interface the accepted key types implement.
type keyParam struct {
	name   string // Go parameter name
	goType string
	iface  bool
}

func (g *gen) keyParams(s *keyspec.Script) []keyParam {
	var out []keyParam
	for _, k := range s.Keys {
		kp := keyParam{name: unexported(k.Name)}
		if len(k.OneOf) == 1 {
			kp.goType = keyTypeName(k.OneOf[0])
		} else {
			kp.goType = exported(s.Name) + exported(k.Name)
			kp.iface = true
		}
		out = append(out, kp)
	}
	return out
}

func argGoType(a *keyspec.Arg) jen.Code {
	if a.Optional && a.Type != keyspec.ArgBytes {
		return jen.Op("*").Add(plainArgGoType(a))
	}
	return plainArgGoType(a)
}

func plainArgGoType(a *keyspec.Arg) jen.Code {
	switch a.Type {
	case keyspec.ArgInt:
		return jen.Int64()
	case keyspec.ArgBool:
		return jen.Bool()
	case keyspec.ArgBytes:
		return jen.Index().Byte()
	case keyspec.ArgDurationMS:
		return jen.Qual("time", "Duration")
	}
	return jen.String()
}

// fieldGoType is a field's Go type; elem names list element types.
func (g *gen) fieldGoType(fl *keyspec.Field, owner string) jen.Code {
	switch {
	case fl.Type == keyspec.ReplyList:
		return jen.Index().Id(g.elemType(fl, owner))
	case fl.Nullable && fl.Type != keyspec.ReplyStrings:
		return jen.Op("*").Add(fieldGoType(fl))
	}
	return fieldGoType(fl)
}

// elemType is the Go type of a list field's elements: its type_name, or the
// owner's type name and the field's.
func (g *gen) elemType(fl *keyspec.Field, owner string) string {
	if fl.TypeName != "" {
		return exported(fl.TypeName)
	}
	return owner + exported(fl.Name) + "Item"
}

func fieldGoType(fl *keyspec.Field) jen.Code {
	switch fl.Type {
	case keyspec.ReplyInt:
		return jen.Int64()
	case keyspec.ReplyBool:
		return jen.Bool()
	case keyspec.ReplyBytes:
		return jen.Index().Byte()
	case keyspec.ReplyDurationMS:
		return jen.Qual("time", "Duration")
	case keyspec.ReplyTimeMS:
		return jen.Qual("time", "Time")
	case keyspec.ReplyEnum:
		return jen.Id(exported(fl.Enum.Name))
	case keyspec.ReplyStrings:
		return jen.Index().String()
	}
	return jen.String()
}

// read is the expression that reads one field from the runtime.Reply r.
func (g *gen) read(fl *keyspec.Field, owner string, ptr bool) jen.Code {
	var rp jen.Code = jen.Op("&").Id("r")
	if ptr {
		rp = jen.Id("r")
	}
	switch {
	case fl.Type == keyspec.ReplyList:
		t := g.elemType(fl, owner)
		return jen.Qual(runtimePkg, "List").Call(rp, jen.Lit(fl.Name), jen.Lit(len(fl.Fields)), jen.Id("decode"+t))
	case fl.Nullable && fl.Type != keyspec.ReplyStrings:
		var fn jen.Code
		switch fl.Type {
		case keyspec.ReplyEnum:
			fn = jen.Func().Params(jen.Id("f").String()).Id(exported(fl.Enum.Name)).Block(
				jen.Return(jen.Id(exported(fl.Enum.Name)).Call(jen.Id("r").Dot("Enum").Call(jen.Id("f"), jen.Id(unexported(fl.Enum.Name)+"Strings")))))
		default:
			fn = jen.Id("r").Dot(readMethod(fl.Type))
		}
		return jen.Qual(runtimePkg, "Nullable").Call(rp, jen.Lit(fl.Name), fn)
	}
	return fieldRead(fl)
}

func readMethod(typ string) string {
	switch typ {
	case keyspec.ReplyInt:
		return "Int"
	case keyspec.ReplyBool:
		return "Bool"
	case keyspec.ReplyBytes:
		return "Bytes"
	case keyspec.ReplyDurationMS:
		return "Duration"
	case keyspec.ReplyTimeMS:
		return "Time"
	}
	return "String"
}

// elemTypes writes the element type and decoder of every list field, once per name.
func (g *gen) elemTypes(f *jen.File, fields []*keyspec.Field, owner, script string) {
	for _, fl := range fields {
		if fl.Type != keyspec.ReplyList {
			continue
		}
		t := g.elemType(fl, owner)
		g.elemTypes(f, fl.Fields, t, script)
		if g.emitted[t] {
			continue
		}
		g.emitted[t] = true
		var fs, body []jen.Code
		for _, ef := range fl.Fields {
			if ef.Doc != "" {
				fs = append(fs, doc(fmt.Sprintf("%s: %s", exported(ef.Name), sentence(ef.Doc))))
			}
			fs = append(fs, jen.Id(exported(ef.Name)).Add(g.fieldGoType(ef, t)))
			body = append(body, jen.Id("out").Dot(exported(ef.Name)).Op("=").Add(g.read(ef, t, true)))
		}
		f.Add(doc(fmt.Sprintf("%s is an element of %s's reply field %s.", t, script, fl.Name)))
		f.Type().Id(t).Struct(fs...)
		f.Line()
		f.Func().Id("decode" + t).Params(jen.Id("r").Op("*").Qual(runtimePkg, "Reply")).Id(t).Block(
			append(append([]jen.Code{jen.Var().Id("out").Id(t)}, body...), jen.Return(jen.Id("out")))...)
		f.Line()
	}
}

// fieldRead is the runtime.Reply call that reads one field.
func fieldRead(fl *keyspec.Field) jen.Code {
	r := jen.Id("r")
	switch fl.Type {
	case keyspec.ReplyInt:
		return r.Dot("Int").Call(jen.Lit(fl.Name))
	case keyspec.ReplyBool:
		return r.Dot("Bool").Call(jen.Lit(fl.Name))
	case keyspec.ReplyBytes:
		return r.Dot("Bytes").Call(jen.Lit(fl.Name))
	case keyspec.ReplyDurationMS:
		return r.Dot("Duration").Call(jen.Lit(fl.Name))
	case keyspec.ReplyTimeMS:
		return r.Dot("Time").Call(jen.Lit(fl.Name))
	case keyspec.ReplyEnum:
		return jen.Id(exported(fl.Enum.Name)).Call(r.Dot("Enum").Call(jen.Lit(fl.Name), jen.Id(unexported(fl.Enum.Name)+"Strings")))
	case keyspec.ReplyStrings:
		return r.Dot("Strings").Call(jen.Lit(fl.Name))
	}
	return r.Dot("String").Call(jen.Lit(fl.Name))
}

// callerArgs are the ARGV a caller passes (ttl_of arguments come from the spec).
func callerArgs(s *keyspec.Script) []*keyspec.Arg {
	var out []*keyspec.Arg
	for _, a := range s.Argv {
		if a.TTLOf == nil {
			out = append(out, a)
		}
	}
	return out
}

func (g *gen) script(f *jen.File, sc Script) {
	s := sc.Spec
	base := exported(s.Name)
	lname := unexported(s.Name)
	kps := g.keyParams(s)
	for _, kp := range kps {
		if wrapperLocals[kp.name] {
			g.errs = append(g.errs, fmt.Errorf("codegen %s: script %s: key %s: its Go parameter %q is a name the generated wrapper uses itself; rename the key", g.in.Name, s.Name, kp.name, kp.name))
		}
	}
	cargs := callerArgs(s)
	result := g.resultType(s)

	// The script value.
	ro := ""
	switch {
	case s.ReadOnly:
		ro = ", read-only (EVALSHA_RO)"
	case s.ReplaySafe != "":
		ro = ", safe to replay: " + strings.TrimSuffix(s.ReplaySafe, ".")
	}
	var replay []jen.Code
	if s.ReplaySafe != "" {
		replay = append(replay, jen.Qual(runtimePkg, "ReplaySafe"))
	}
	if g.in.Client == keyspec.ClientRueidis {
		// rueidis sends strings: the Input keeps them (runtime.StringArgs).
		replay = append(replay, jen.Qual(runtimePkg, "StringArgs"))
	}
	if g.in.Functions() {
		fn := functions.FunctionName(s, sc.SHA1)
		call := "FCALL"
		if s.ReadOnly {
			call = "FCALL_RO"
		}
		f.Add(doc(fmt.Sprintf("%sScript is lua/%s, run as function %s of Library (%s).", base, s.LuaFile(), fn, call)))
		f.Var().Id(base+"Script").Op("=").Qual(runtimePkg, "MustFunction").Call(append([]jen.Code{jen.Lit(s.Name), jen.Id(lname + "Source"), jen.Id(base + "SHA1"), jen.Lit(fn), jen.Lit(s.ReadOnly)}, replay...)...)
	} else {
		f.Add(doc(fmt.Sprintf("%sScript is lua/%s%s.", base, s.LuaFile(), ro)))
		f.Var().Id(base+"Script").Op("=").Qual(runtimePkg, "MustScript").Call(append([]jen.Code{jen.Lit(s.Name), jen.Id(lname + "Source"), jen.Id(base + "SHA1"), jen.Lit(s.ReadOnly)}, replay...)...)
	}
	f.Line()

	// KEYS interfaces.
	for i, kp := range kps {
		if !kp.iface {
			continue
		}
		var names []string
		for _, k := range s.Keys[i].OneOf {
			names = append(names, keyTypeName(k))
		}
		marker := lname + exported(s.Keys[i].Name)
		f.Add(doc(fmt.Sprintf("%s is a key %s takes as KEYS[%d] (%s): %s.", kp.goType, s.Name, i+1, s.Keys[i].Name, strings.Join(names, ", "))))
		f.Type().Id(kp.goType).Interface(jen.Id("String").Params().String(), jen.Id(marker).Params())
		f.Line()
		for _, n := range names {
			f.Func().Params(jen.Id(n)).Id(marker).Params().Block()
		}
		f.Line()
	}

	// Args.
	if len(cargs) > 0 {
		var fs []jen.Code
		for _, a := range cargs {
			d := sentence(a.Doc)
			if a.Optional {
				d = strings.TrimSpace(d + fmt.Sprintf(" Optional: nil sends an empty ARGV[%d], which no present value encodes to.", argIndex(s, a)))
				if a.Type == keyspec.ArgString || a.Type == keyspec.ArgBytes {
					d += " A present value must not be empty."
				}
			}
			if d != "" {
				fs = append(fs, doc(fmt.Sprintf("%s: %s", exported(a.Name), d)))
			}
			fs = append(fs, jen.Id(exported(a.Name)).Add(argGoType(a)))
		}
		f.Add(doc(fmt.Sprintf("%sArgs are the ARGV of %s.", base, base)))
		f.Type().Id(base + "Args").Struct(fs...)
		f.Line()
	}

	// Result, once per type name; list elements' types, once per name.
	owner := g.replyOwner(s)
	g.elemTypes(f, s.Reply.All(), owner, s.Name)
	if s.Reply.Value == nil && !g.emitted[result.GoString()] {
		g.emitted[result.GoString()] = true
		var fs []jen.Code
		for _, fl := range s.Reply.Fields {
			if fl.Doc != "" {
				fs = append(fs, doc(fmt.Sprintf("%s: %s", exported(fl.Name), sentence(fl.Doc))))
			}
			fs = append(fs, jen.Id(exported(fl.Name)).Add(g.fieldGoType(fl, owner)))
		}
		name := owner
		what := "the reply of " + s.Name
		if s.Reply.TypeName != "" {
			what = "the reply of " + strings.Join(g.scriptsWithReply(s.Reply.TypeName), ", ")
		}
		f.Add(doc(fmt.Sprintf("%s is %s.", name, what)))
		f.Type().Id(name).Struct(fs...)
		f.Line()
	}

	g.inputFunc(f, s, kps, cargs)
	g.decodeFunc(f, s, result)

	// The wrapper and its batch form.
	var params, callIn []jen.Code
	params = append(params, jen.Id("ctx").Qual("context", "Context"))
	prefixed := g.in.Prefix != nil
	if prefixed {
		callIn = append(callIn, jen.Id("s").Dot("prefix"))
	}
	for _, kp := range kps {
		params = append(params, jen.Id(kp.name).Id(kp.goType))
		callIn = append(callIn, jen.Id(kp.name))
	}
	if len(cargs) > 0 {
		params = append(params, jen.Id("args").Id(base+"Args"))
		callIn = append(callIn, jen.Id("args"))
	}
	docs := []string{fmt.Sprintf("%s runs %s on %s. %s", base, s.Name, s.DB.Name, s.Doc)}
	if len(s.Errors) > 0 {
		var errs []string
		for _, e := range s.Errors {
			d := lowerFirst(strings.TrimSpace(sentence(e.Doc)))
			if d == "" {
				d = "declared."
			}
			errs = append(errs, "Err"+exported(strings.ToLower(e.Code))+": "+d)
		}
		docs = append(docs, "Error replies. "+strings.Join(errs, " "))
	}
	f.Add(doc(docs...))
	f.Func().Params(jen.Id("s").Op("*").Id("Scripts")).Id(base).Params(params...).Params(result, jen.Error()).Block(
		jen.Return(jen.Qual(runtimePkg, "Run").Call(jen.Id("ctx"), jen.Id("s").Dot(unexported(s.DB.Name)), jen.Id(lname+"Input").Call(callIn...), jen.Id("decode"+base))),
	)
	f.Line()

	// The batch form: a method where the Scripts hold the deployment prefix.
	qparams := append([]jen.Code{jen.Id("b").Op("*").Qual(runtimePkg, "Batch")}, params[1:]...)
	f.Add(doc(fmt.Sprintf("Queue%s is %s in a batch, run on a client of %s.", base, base, s.DB.Name)))
	fn := f.Func()
	if prefixed {
		fn = fn.Params(jen.Id("s").Op("*").Id("Scripts"))
	}
	fn.Id("Queue"+base).Params(qparams...).Op("*").Qual(runtimePkg, "Pending").Types(result).Block(
		jen.Return(jen.Qual(runtimePkg, "Queue").Call(jen.Id("b"), jen.Id(lname+"Input").Call(callIn...), jen.Id("decode"+base))),
	)
	f.Line()
}

// argIndex is the 1-based ARGV position of a.
func argIndex(s *keyspec.Script, a *keyspec.Arg) int {
	for i, x := range s.Argv {
		if x == a {
			return i + 1
		}
	}
	return 0
}

// replyOwner names the result type of a script (element types derive from it).
func (g *gen) replyOwner(s *keyspec.Script) string {
	switch {
	case s.Reply.Value != nil:
		return exported(s.Name)
	case s.Reply.TypeName != "":
		return exported(s.Reply.TypeName)
	}
	return exported(s.Name) + "Result"
}

func (g *gen) resultType(s *keyspec.Script) *jen.Statement {
	switch {
	case s.Reply.Value != nil:
		return jen.Add(g.fieldGoType(s.Reply.Value, exported(s.Name)))
	case s.Reply.TypeName != "":
		return jen.Id(exported(s.Reply.TypeName))
	}
	return jen.Id(exported(s.Name) + "Result")
}

func (g *gen) scriptsWithReply(typeName string) []string {
	var out []string
	for _, s := range g.scripts {
		if s.Spec.Reply.TypeName == typeName {
			out = append(out, s.Spec.Name)
		}
	}
	return out
}

// inputFunc writes <script>Input: the keys and arguments, one runtime.Input
// call each, which checks the value and encodes it for ARGV. Before it, for each
// KEYS position that takes several key types, a function that reads the key out
// of the interface.
func (g *gen) inputFunc(f *jen.File, s *keyspec.Script, kps []keyParam, cargs []*keyspec.Arg) {
	base, lname := exported(s.Name), unexported(s.Name)
	var params, body []jen.Code
	prefixed := g.in.Prefix != nil
	if prefixed {
		params = append(params, jen.Id("prefix").String())
	}
	shared := s.SharedPlaceholders
	// at[i][ph] is the segment of placeholder ph in position i's key: a constant,
	// or a local the position's key function returned.
	at := make([]map[string]jen.Code, len(kps))
	keys := make([]jen.Code, len(kps))
	for i, kp := range kps {
		at[i] = map[string]jen.Code{}
		params = append(params, jen.Id(kp.name).Id(kp.goType))
		pos := jen.Lit(s.Keys[i].Name)
		if !kp.iface {
			// A key type of this package: its name is its unexported field.
			keys[i] = jen.Id(kp.name).Dot("key")
			for _, ph := range shared {
				if idx := s.Keys[i].OneOf[0].Pattern.Index(ph); idx >= 0 {
					at[i][ph] = jen.Lit(idx)
				}
			}
			if prefixed {
				body = append(body, jen.Id("in").Dot("PrefixedKey").Call(pos, keys[i], jen.Id(kp.name).Dot("p")))
			} else {
				body = append(body, jen.Id("in").Dot("Key").Call(pos, keys[i]))
			}
			continue
		}
		// Only the declared key types themselves are accepted: not a nil
		// interface, not a pointer to one, not another package's type that
		// embeds one and overrides String. Positions taking the same key types
		// (the rate limits' buckets) share one function.
		local := kp.name + "Name"
		results := []jen.Code{jen.String()}
		locals := []jen.Code{jen.Id(local)}
		zero := []jen.Code{jen.Lit("")}
		if prefixed {
			results = append(results, jen.String())
			locals = append(locals, jen.Id(kp.name+"Prefix"))
			zero = append(zero, jen.Lit(""))
		}
		var phs []string
		for _, ph := range shared {
			if s.Keys[i].OneOf[0].Pattern.Index(ph) >= 0 {
				phs = append(phs, ph)
				v := kp.name + "At" + exported(ph)
				results = append(results, jen.Int())
				locals = append(locals, jen.Id(v))
				zero = append(zero, jen.Lit(0))
				at[i][ph] = jen.Id(v)
			}
		}
		var names []string
		var cases []jen.Code
		for _, k := range s.Keys[i].OneOf {
			names = append(names, keyTypeName(k))
			ret := []jen.Code{jen.Id("k").Dot("key")}
			if prefixed {
				ret = append(ret, jen.Id("k").Dot("p"))
			}
			for _, ph := range phs {
				ret = append(ret, jen.Lit(k.Pattern.Index(ph)))
			}
			cases = append(cases, jen.Case(jen.Id(keyTypeName(k))).Block(jen.Return(ret...)))
		}
		sig := strings.Join(names, ",") + "|" + strings.Join(phs, ",")
		fnName, done := g.keyFuncs[sig]
		if !done {
			fnName = lname + exported(s.Keys[i].Name) + "Key"
			g.keyFuncs[sig] = fnName
			what := "the key k holds"
			if len(results) > 1 {
				what = "the key k holds (its prefix, the segments of " + strings.Join(phs, ", ") + ")"
			}
			if prefixed && len(phs) == 0 {
				what = "the key k holds and its prefix"
			}
			f.Add(doc(fmt.Sprintf("%s is %s when k is one of %s itself, else the zero value (nil, a pointer, a type embedding one).", fnName, what, strings.Join(names, ", "))))
			f.Func().Id(fnName).Params(jen.Id("k").Any()).Params(results...).Block(
				jen.Switch(jen.Id("k").Op(":=").Id("k").Assert(jen.Type())).Block(cases...),
				jen.Return(zero...),
			)
			f.Line()
		}
		keys[i] = jen.Id(local)
		body = append(body, jen.List(locals...).Op(":=").Id(fnName).Call(jen.Id(kp.name)))
		if prefixed {
			body = append(body, jen.Id("in").Dot("PrefixedKey").Call(pos, jen.Id(local), jen.Id(kp.name+"Prefix")))
		} else {
			body = append(body, jen.Id("in").Dot("Key").Call(pos, jen.Id(local)))
		}
	}
	// Shared placeholders: every position that has one holds the same value.
	for _, ph := range shared {
		first := -1
		for i := range kps {
			seg, ok := at[i][ph]
			if !ok {
				continue
			}
			if first < 0 {
				first = i
				continue
			}
			body = append(body, jen.Id("in").Dot("Same").Call(jen.Lit(ph), keys[first], at[first][ph], keys[i], seg))
		}
	}
	if len(cargs) > 0 {
		params = append(params, jen.Id("a").Id(base+"Args"))
	}
	for _, a := range s.Argv {
		field := jen.Id("a").Dot(exported(a.Name))
		arg := jen.Lit(a.Name)
		opt := ""
		if a.Optional {
			opt = "Opt"
		}
		in := jen.Id("in").Dot
		var call jen.Code
		switch {
		case a.TTLOf != nil:
			call = in("Millis").Call(jen.Id(exported(a.TTLOf.Name) + "TTL"))
		case a.Type == keyspec.ArgBool:
			call = in(opt + "Bool").Call(field)
		case a.Type == keyspec.ArgInt:
			call = in(opt+"Int").Call(arg, field, intCode(a.Min), intCode(a.Max))
		case a.Type == keyspec.ArgDurationMS:
			call = in(opt+"Duration").Call(arg, field, durationOrZero(a.MinDur), durationOrZero(a.MaxDur))
		case a.Type == keyspec.ArgString:
			call = in(opt+"String").Call(arg, field, jen.Lit(a.MaxBytes))
		case a.Type == keyspec.ArgBytes:
			call = in(opt+"Bytes").Call(arg, field, jen.Lit(a.MaxBytes))
		case a.Type == keyspec.ArgToken:
			call = in(opt+"Token").Call(arg, field)
		case a.Type == keyspec.ArgHex:
			call = in(opt+"Hex").Call(arg, field, jen.Lit(a.Len))
		case a.Type == keyspec.ArgUUID:
			call = in(opt+"UUID").Call(arg, field)
		case a.Type == keyspec.ArgName:
			call = in(opt+"Name").Call(arg, field, jen.Lit(a.MaxLen))
		default:
			g.errs = append(g.errs, fmt.Errorf("codegen %s: script %s: argument %s: no encoding for type %q", g.in.Name, s.Name, a.Name, a.Type))
			continue
		}
		body = append(body, call)
	}
	var start jen.Code
	if prefixed {
		start = jen.Id(base+"Script").Dot("PrefixedInput").Call(jen.Id("prefix"), jen.Lit(len(kps)), jen.Lit(len(s.Argv)))
	} else {
		start = jen.Id(base+"Script").Dot("Input").Call(jen.Lit(len(kps)), jen.Lit(len(s.Argv)))
	}
	body = append([]jen.Code{jen.Id("in").Op(":=").Add(start)}, body...)
	body = append(body, jen.Return(jen.Id("in")))
	f.Func().Id(lname+"Input").Params(params...).Qual(runtimePkg, "Input").Block(body...)
	f.Line()
}

func durationOrZero(d time.Duration) jen.Code {
	if d == 0 {
		return jen.Lit(0)
	}
	return durationCode(d)
}

// decodeFunc writes decode<Script>: the reply, field by field, as the declared type.
func (g *gen) decodeFunc(f *jen.File, s *keyspec.Script, result *jen.Statement) {
	base := exported(s.Name)
	var body []jen.Code
	if s.Reply.Value != nil {
		body = append(body,
			jen.Id("r").Op(":=").Id(base+"Script").Dot("ValueReply").Call(jen.Id("v")),
			jen.Id("out").Op(":=").Add(g.read(s.Reply.Value, exported(s.Name), false)),
			jen.Return(jen.Id("out"), jen.Id("r").Dot("Err").Call()),
		)
	} else {
		body = append(body,
			jen.Id("r").Op(":=").Id(base+"Script").Dot("ArrayReply").Call(jen.Id("v"), jen.Lit(len(s.Reply.Fields))),
			jen.Var().Id("out").Add(result),
		)
		for _, fl := range s.Reply.Fields {
			body = append(body, jen.Id("out").Dot(exported(fl.Name)).Op("=").Add(g.read(fl, g.replyOwner(s), false)))
		}
		body = append(body, jen.Return(jen.Id("out"), jen.Id("r").Dot("Err").Call()))
	}
	f.Func().Id("decode"+base).Params(jen.Id("v").Any()).Params(result, jen.Error()).Block(body...)
	f.Line()
}
