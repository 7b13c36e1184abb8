package codegen

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/dave/jennifer/jen"
	"github.com/hanchat/luagen/gen/keyspec"
)

// ---- scripts.go ----

func (g *gen) scriptsFile() *jen.File {
	f := g.newFile()
	dbs := g.in.LiveDBs()

	var fields []jen.Code
	for _, d := range dbs {
		fields = append(fields, jen.Comment(fmt.Sprintf("%s is a client of %s (db %d, %s).", exported(d.Name), d.ID(), d.Index, d.URLEnv)), jen.Id(exported(d.Name)).Qual(redisPkg, "Scripter"))
	}
	f.Add(doc(fmt.Sprintf("Clients holds one client per database of %s the scripts run in. A client may be nil when no script of its database is called.", g.in.Name)))
	f.Type().Id("Clients").Struct(fields...)
	f.Line()
	prefixed := g.in.Prefix != nil
	f.Add(doc(fmt.Sprintf("Scripts runs the Lua scripts of %s through typed wrappers. It is safe for concurrent use.", g.in.Name)))
	if prefixed {
		f.Type().Id("Scripts").Struct(jen.Id("c").Id("Clients"), jen.Id("prefix").String())
		f.Line()
		f.Comment("Option configures NewScripts.")
		f.Type().Id("Option").Func().Params(jen.Op("*").Id("Scripts"))
		f.Line()
		f.Add(doc("WithPrefix binds the Scripts to deployment p: its wrappers take only keys built with p."))
		f.Func().Id("WithPrefix").Params(jen.Id("p").Id("Prefix")).Id("Option").Block(
			jen.Return(jen.Func().Params(jen.Id("s").Op("*").Id("Scripts")).Block(jen.Id("s").Dot("prefix").Op("=").Id("p").Dot("s"))),
		)
		f.Line()
	} else {
		f.Type().Id("Scripts").Struct(jen.Id("c").Id("Clients"))
		f.Line()
	}

	var checks []jen.Code
	for _, d := range dbs {
		n := exported(d.Name)
		checks = append(checks, jen.If(jen.Id("c").Dot(n).Op("!=").Nil()).Block(
			jen.If(jen.Err().Op(":=").Qual(runtimePkg, "CheckDB").Call(jen.Id("c").Dot(n), jen.Id(n)), jen.Err().Op("!=").Nil()).Block(
				jen.Return(jen.Nil(), jen.Qual("fmt", "Errorf").Call(jen.Lit(g.in.Name+" "+d.Name+": %w"), jen.Err())),
			),
		))
	}
	if prefixed {
		pre := []jen.Code{
			jen.Id("s").Op(":=").Op("&").Id("Scripts").Values(jen.Dict{jen.Id("c"): jen.Id("c")}),
			jen.For(jen.List(jen.Id("_"), jen.Id("o")).Op(":=").Range().Id("opts")).Block(jen.Id("o").Call(jen.Id("s"))),
			jen.If(jen.Id("s").Dot("prefix").Op("==").Lit("")).Block(jen.Return(jen.Nil(), jen.Qual("fmt", "Errorf").Call(jen.Lit(g.in.Name+": NewScripts needs WithPrefix: every key of "+g.in.Name+" starts with a deployment prefix: %w"), jen.Qual(runtimePkg, "ErrInvalidPrefix")))),
		}
		checks = append(pre, checks...)
		checks = append(checks, jen.Return(jen.Id("s"), jen.Nil()))
		f.Add(doc("NewScripts checks that each client selects its database, where the client can tell (a *redis.Client or *redis.Ring), so a script never runs in the wrong one, and binds the Scripts to the deployment prefix WithPrefix names (required)."))
		f.Func().Id("NewScripts").Params(jen.Id("c").Id("Clients"), jen.Id("opts").Op("...").Id("Option")).Params(jen.Op("*").Id("Scripts"), jen.Error()).Block(checks...)
	} else {
		checks = append(checks, jen.Return(jen.Op("&").Id("Scripts").Values(jen.Dict{jen.Id("c"): jen.Id("c")}), jen.Nil()))
		f.Add(doc("NewScripts checks that each client selects its database, where the client can tell (a *redis.Client or *redis.Ring), so a script never runs in the wrong one."))
		f.Func().Id("NewScripts").Params(jen.Id("c").Id("Clients")).Params(jen.Op("*").Id("Scripts"), jen.Error()).Block(checks...)
	}
	f.Line()

	var all []jen.Code
	for _, s := range g.scripts {
		all = append(all, jen.Line().Id(exported(s.Spec.Name)+"Script"))
	}
	all = append(all, jen.Line())
	if g.in.Split() {
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
			doc(fmt.Sprintf("Err%s is the error reply %s of %s. %s Match it with errors.Is.", exported(strings.ToLower(c)), c, strings.Join(users[c], ", "), strings.Join(docs[c], " "))),
			jen.Id("Err"+exported(strings.ToLower(c))).Op("=").Qual(runtimePkg, "ErrorCode").Call(jen.Lit(c)),
		)
	}
	f.Var().Defs(defs...)
	f.Line()
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
			kp.goType = keyType(k.OneOf[0])
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
	cargs := callerArgs(s)
	result := g.resultType(s)

	// The script value.
	mode := "EVALSHA"
	if s.ReadOnly {
		mode = "EVALSHA_RO"
	}
	f.Add(doc(fmt.Sprintf("%sScript is script %s (lua/%s), run with %s.", base, s.Name, s.LuaFile(), mode)))
	f.Var().Id(base+"Script").Op("=").Qual(runtimePkg, "MustScript").Call(jen.Lit(s.Name), jen.Id(lname+"Source"), jen.Id(base+"SHA1"), jen.Lit(s.ReadOnly))
	f.Line()

	// KEYS interfaces.
	for i, kp := range kps {
		if !kp.iface {
			continue
		}
		var names []string
		for _, k := range s.Keys[i].OneOf {
			names = append(names, keyType(k))
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
		f.Add(doc(fmt.Sprintf("%sArgs are the ARGV of %s.", base, s.Name)))
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

	// The wrapper.
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
	var zero jen.Code = jen.Id("zero")
	db := exported(s.DB.Name)
	var errs []string
	for _, e := range s.Errors {
		errs = append(errs, "Err"+exported(strings.ToLower(e.Code)))
	}
	docs := []string{fmt.Sprintf("%s runs %s (%s %s). %s", base, s.Name, g.in.Name, s.DB.Name, s.Doc)}
	if len(errs) > 0 {
		docs = append(docs, fmt.Sprintf("Its declared error replies match %s with errors.Is.", strings.Join(errs, ", ")))
	}
	f.Add(doc(docs...))
	f.Func().Params(jen.Id("s").Op("*").Id("Scripts")).Id(base).Params(params...).Params(result, jen.Error()).Block(
		jen.Var().Id("zero").Add(result),
		jen.If(jen.Id("s").Dot("c").Dot(db).Op("==").Nil()).Block(
			jen.Return(zero, jen.Qual(runtimePkg, "NoClient").Call(jen.Lit(g.in.Name), jen.Lit(s.DB.Name), jen.Lit(s.Name))),
		),
		jen.List(jen.Id("keys"), jen.Id("argv"), jen.Err()).Op(":=").Id(lname+"Input").Call(callIn...),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(zero, jen.Err())),
		jen.List(jen.Id("v"), jen.Err()).Op(":=").Id(base+"Script").Dot("Run").Call(jen.Id("ctx"), jen.Id("s").Dot("c").Dot(db), jen.Id("keys"), jen.Id("argv").Op("...")),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(zero, jen.Err())),
		jen.Return(jen.Id("decode"+base).Call(jen.Id("v"))),
	)
	f.Line()

	// The batch form: a method where the Scripts hold the deployment prefix.
	qparams := append([]jen.Code{jen.Id("b").Op("*").Qual(runtimePkg, "Batch")}, params[1:]...)
	f.Add(doc(fmt.Sprintf("Queue%s adds a %s call to a batch; run the batch on a client of %s %s.", base, s.Name, g.in.Name, s.DB.Name)))
	fn := f.Func()
	if prefixed {
		fn = fn.Params(jen.Id("s").Op("*").Id("Scripts"))
	}
	fn.Id("Queue"+base).Params(qparams...).Op("*").Qual(runtimePkg, "Pending").Types(result).Block(
		jen.List(jen.Id("keys"), jen.Id("argv"), jen.Err()).Op(":=").Id(lname+"Input").Call(callIn...),
		jen.Return(jen.Qual(runtimePkg, "Queue").Call(jen.Id("b"), jen.Id(base+"Script"), jen.Id("keys"), jen.Id("argv"), jen.Err(), jen.Id("decode"+base))),
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

// inputFunc writes <script>Input: it checks the keys and arguments and encodes ARGV.
func (g *gen) inputFunc(f *jen.File, s *keyspec.Script, kps []keyParam, cargs []*keyspec.Arg) {
	base, lname := exported(s.Name), unexported(s.Name)
	var params, body, keys []jen.Code
	fail := jen.Return(jen.Nil(), jen.Nil(), jen.Err())
	prefixed := g.in.Prefix != nil
	if prefixed {
		params = append(params, jen.Id("prefix").String())
	}
	shared := s.SharedPlaceholders
	// at[i][ph] is the segment of placeholder ph in position i's key: a constant,
	// or a local set by the type switch.
	at := make([]map[string]jen.Code, len(kps))
	for i, kp := range kps {
		at[i] = map[string]jen.Code{}
		params = append(params, jen.Id(kp.name).Id(kp.goType))
		missing := jen.Qual(runtimePkg, "MissingKey").Call(jen.Lit(s.Name), jen.Lit(s.Keys[i].Name))
		var name, owner jen.Code
		if !kp.iface {
			// A key type of this package: its name is its unexported field.
			body = append(body, jen.If(jen.Id(kp.name).Dot("key").Op("==").Lit("")).Block(jen.Return(jen.Nil(), jen.Nil(), missing)))
			name, owner = jen.Id(kp.name).Dot("key"), jen.Id(kp.name).Dot("p")
			for _, ph := range shared {
				if idx := s.Keys[i].OneOf[0].Pattern.Index(ph); idx >= 0 {
					at[i][ph] = jen.Lit(idx)
				}
			}
		} else {
			// Only the declared key types themselves are accepted: not a nil
			// interface, not a pointer to one, not another package's type that
			// embeds one and overrides String.
			local := kp.name + "Name"
			decl := []jen.Code{jen.Var().Id(local).String()}
			if prefixed {
				decl = append(decl, jen.Var().Id(kp.name+"Prefix").String())
			}
			var phs []string
			for _, ph := range shared {
				if s.Keys[i].OneOf[0].Pattern.Index(ph) >= 0 {
					phs = append(phs, ph)
					v := kp.name + "At" + exported(ph)
					decl = append(decl, jen.Var().Id(v).Int())
					at[i][ph] = jen.Id(v)
				}
			}
			var cases []jen.Code
			for _, k := range s.Keys[i].OneOf {
				stmts := []jen.Code{jen.Id(local).Op("=").Id("k").Dot("key")}
				if prefixed {
					stmts = append(stmts, jen.Id(kp.name+"Prefix").Op("=").Id("k").Dot("p"))
				}
				for _, ph := range phs {
					stmts = append(stmts, jen.Id(kp.name+"At"+exported(ph)).Op("=").Lit(k.Pattern.Index(ph)))
				}
				cases = append(cases, jen.Case(jen.Id(keyType(k))).Block(stmts...))
			}
			body = append(body, decl...)
			body = append(body,
				jen.Switch(jen.Id("k").Op(":=").Id(kp.name).Assert(jen.Type())).Block(cases...),
				jen.If(jen.Id(local).Op("==").Lit("")).Block(jen.Return(jen.Nil(), jen.Nil(), missing)),
			)
			name, owner = jen.Id(local), jen.Id(kp.name+"Prefix")
		}
		if prefixed {
			body = append(body, jen.If(jen.Add(owner).Op("!=").Id("prefix")).Block(
				jen.Return(jen.Nil(), jen.Nil(), jen.Qual(runtimePkg, "WrongPrefix").Call(jen.Lit(s.Name), jen.Lit(s.Keys[i].Name)))))
		}
		keys = append(keys, name)
	}
	// Shared placeholders: every position that has one holds the same value.
	var skip jen.Code = jen.Lit(0)
	if prefixed {
		skip = jen.Len(jen.Id("prefix"))
	}
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
			body = append(body, jen.If(
				jen.Qual(runtimePkg, "KeySegment").Call(keys[first], skip, at[first][ph]).Op("!=").Qual(runtimePkg, "KeySegment").Call(keys[i], skip, seg),
			).Block(jen.Return(jen.Nil(), jen.Nil(), jen.Qual(runtimePkg, "MismatchedKeys").Call(jen.Lit(s.Name), jen.Lit(ph)))))
		}
	}
	if len(cargs) > 0 {
		params = append(params, jen.Id("a").Id(base+"Args"))
	}
	hasErr := false
	for i, a := range s.Argv {
		slot := jen.Id("argv").Index(jen.Lit(i))
		field := jen.Id("a").Dot(exported(a.Name))
		value := field
		if a.Optional && a.Type != keyspec.ArgBytes {
			value = jen.Op("*").Add(field)
		}
		name, arg := jen.Lit(s.Name), jen.Lit(a.Name)
		var check jen.Code
		switch {
		case a.TTLOf != nil:
			body = append(body, slot.Op("=").Id(exported(a.TTLOf.Name)+"TTL").Dot("Milliseconds").Call())
			continue
		case a.Type == keyspec.ArgBool:
			set := slot.Clone().Op("=").Qual(runtimePkg, "ArgBool").Call(value)
			if a.Optional {
				body = append(body, jen.If(jen.Add(field).Op("==").Nil()).Block(slot.Clone().Op("=").Qual(runtimePkg, "ArgAbsent")).Else().Block(set))
			} else {
				body = append(body, set)
			}
			continue
		case a.Type == keyspec.ArgInt:
			check = jen.Qual(runtimePkg, "ArgInt").Call(name, arg, value, intCode(a.Min), intCode(a.Max))
		case a.Type == keyspec.ArgDurationMS:
			check = jen.Qual(runtimePkg, "ArgDuration").Call(name, arg, value, durationOrZero(a.MinDur), durationOrZero(a.MaxDur))
		case a.Type == keyspec.ArgString:
			check = jen.Qual(runtimePkg, "ArgString").Call(name, arg, value, jen.Lit(a.MaxBytes))
		case a.Type == keyspec.ArgBytes:
			check = jen.Qual(runtimePkg, "ArgBytes").Call(name, arg, value, jen.Lit(a.MaxBytes))
		case a.Type == keyspec.ArgToken:
			check = jen.Qual(runtimePkg, "ArgToken").Call(name, arg, value)
		case a.Type == keyspec.ArgHex:
			check = jen.Qual(runtimePkg, "ArgHex").Call(name, arg, value, jen.Lit(a.Len))
		case a.Type == keyspec.ArgUUID:
			check = jen.Qual(runtimePkg, "ArgUUID").Call(name, arg, value)
		case a.Type == keyspec.ArgName:
			check = jen.Qual(runtimePkg, "ArgName").Call(name, arg, value, jen.Lit(a.MaxLen))
		}
		hasErr = true
		encode := jen.If(jen.List(slot.Clone(), jen.Err()).Op("=").Add(check), jen.Err().Op("!=").Nil()).Block(fail)
		if !a.Optional {
			body = append(body, encode)
			continue
		}
		present := []jen.Code{}
		if a.Type == keyspec.ArgString || a.Type == keyspec.ArgBytes {
			present = append(present, jen.If(jen.Err().Op("=").Qual(runtimePkg, "CheckPresent").Call(name, arg, jen.Len(value)), jen.Err().Op("!=").Nil()).Block(fail))
		}
		present = append(present, encode)
		body = append(body, jen.If(jen.Add(field).Op("==").Nil()).Block(slot.Clone().Op("=").Qual(runtimePkg, "ArgAbsent")).Else().Block(present...))
	}
	prelude := []jen.Code{}
	if len(s.Argv) > 0 {
		prelude = append(prelude, jen.Id("argv").Op(":=").Make(jen.Index().Any(), jen.Lit(len(s.Argv))))
	} else {
		prelude = append(prelude, jen.Var().Id("argv").Index().Any())
	}
	if hasErr {
		prelude = append(prelude, jen.Var().Err().Error())
	}
	body = append(prelude, body...)
	body = append(body, jen.Return(jen.Index().String().Values(keys...), jen.Id("argv"), jen.Nil()))
	f.Func().Id(lname+"Input").Params(params...).Params(jen.Index().String(), jen.Index().Any(), jen.Error()).Block(body...)
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
			jen.Id("r").Op(":=").Qual(runtimePkg, "ValueReply").Call(jen.Lit(s.Name), jen.Id("v")),
			jen.Id("out").Op(":=").Add(g.read(s.Reply.Value, exported(s.Name), false)),
			jen.Return(jen.Id("out"), jen.Id("r").Dot("Err").Call()),
		)
	} else {
		body = append(body,
			jen.Id("r").Op(":=").Qual(runtimePkg, "ArrayReply").Call(jen.Lit(s.Name), jen.Id("v"), jen.Lit(len(s.Reply.Fields))),
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
