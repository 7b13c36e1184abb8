// scripts.go's model, the frame around the scripts: the Clients the wrappers
// run on, the Scripts that bind them (and the deployment prefix), AllScripts, the
// declared error codes; then each script (model_script.go).

package codegen

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/hanchat/luagen/gen/keyspec"
)

// scriptsFile is scripts.go.
type scriptsFile struct {
	ClientsDoc comment
	Clients    []clientField // one per live database
	ScriptsDoc comment
	DBFields   []string // Scripts' runtime.DB fields, one per live database
	Prefixed   bool     // Scripts holds the deployment prefix: Option and WithPrefix exist
	NewScripts newScripts
	AllDoc     comment
	All        []string // every script's runtime.Script var
	Errors     []errorVar
	Scripts    []scriptDecl
}

// clientField is one client of Clients.
type clientField struct {
	Doc  comment
	Name string
	Type goType
}

// newScripts is NewScripts: it binds each client to its database.
type newScripts struct {
	Doc      comment
	Prefixed bool   // takes opts ...Option and needs WithPrefix
	NoPrefix string // the error format when WithPrefix is missing
	BindPkg  string // the package whose Bind checks a client
	Binds    []dbBind
}

// dbBind binds Clients.<Client> to Scripts.<Field>, as database <DB>.
type dbBind struct {
	Field  string
	Client string
	Label  string // how errors and metrics name the database: "<instance> <db>"
	DB     string // the database's index constant
}

// errorVar is Err<Code>, a runtime.ErrorCode.
type errorVar struct {
	Doc  comment
	Name string
	Code string
}

func (b *modelBuilder) scriptsFile() scriptsFile {
	in := b.in
	rueidis := in.Client == keyspec.ClientRueidis
	f := scriptsFile{
		ScriptsDoc: wrapped(fmt.Sprintf("Scripts runs the Lua scripts of %s through typed wrappers. It is safe for concurrent use.", in.Name)),
		Prefixed:   b.prefixed,
		NewScripts: newScripts{Prefixed: b.prefixed, BindPkg: runtimePkg},
	}
	client := goType{Pkg: redisPkg, Name: "Scripter"}
	f.ClientsDoc = wrapped(fmt.Sprintf("Clients holds one client per database of %s the scripts run in. A client may be nil when no script of its database is called.", in.Name))
	if rueidis {
		client = goType{Pkg: rueidisPkg, Name: "Conn", Ptr: true}
		f.NewScripts.BindPkg = rueidisPkg
		f.ClientsDoc = wrapped(fmt.Sprintf("Clients holds one client per database of %s the scripts run in: rueidis clients (the spec's client: rueidis) checked by rueidisbackend.New. A client may be nil when no script of its database is called.", in.Name))
	}
	for _, d := range in.LiveDBs() {
		n := exported(d.Name)
		f.Clients = append(f.Clients, clientField{Doc: line(fmt.Sprintf("%s is a client of %s (db %d, %s).", n, d.ID(), d.Index, d.URLEnv)), Name: n, Type: client})
		f.DBFields = append(f.DBFields, unexported(d.Name))
		f.NewScripts.Binds = append(f.NewScripts.Binds, dbBind{Field: unexported(d.Name), Client: n, Label: in.Name + " " + d.Name, DB: n})
	}
	b.decls.add(fileScripts, "Clients", "Scripts")
	switch {
	case b.prefixed:
		f.NewScripts.NoPrefix = in.Name + ": NewScripts needs WithPrefix: every key of " + in.Name + " starts with a deployment prefix: %w"
		f.NewScripts.Doc = wrapped("NewScripts checks that each client selects its database, where the client can tell (a *redis.Client or *redis.Ring), so a script never runs in the wrong one, and binds the Scripts to the deployment prefix WithPrefix names (required).")
		b.decls.add(fileScripts, "Option", "WithPrefix")
	case rueidis:
		f.NewScripts.Doc = wrapped("NewScripts checks that each client selects its database, so a script never runs in the wrong one.")
	default:
		f.NewScripts.Doc = wrapped("NewScripts checks that each client selects its database, where the client can tell (a *redis.Client or *redis.Ring), so a script never runs in the wrong one.")
	}
	f.AllDoc = b.allScriptsDoc()
	for _, s := range b.scripts {
		f.All = append(f.All, exported(s.Spec.Name)+"Script")
	}
	b.decls.add(fileScripts, "NewScripts", "AllScripts")
	f.Errors = b.errorVars()
	for _, s := range b.scripts {
		f.Scripts = append(f.Scripts, b.script(s))
	}
	return f
}

func (b *modelBuilder) allScriptsDoc() comment {
	in := b.in
	switch {
	case in.Functions():
		return wrapped(fmt.Sprintf("AllScripts lists every script of %s. They run as functions of Library, which the deploy step loads (runtime.LoadLibrary, luagen load --instance %s); runtime.Preload refuses them.", in.Name, in.Name))
	case in.Split():
		return wrapped(fmt.Sprintf("AllScripts lists every script of %s, e.g. for runtime.Preload. The script cache is per server and %s is split over servers (its own and %s): preload on a client of each.", in.Name, in.Name, strings.Join(in.ServerNames()[1:], ", ")))
	}
	return wrapped(fmt.Sprintf("AllScripts lists every script of %s, e.g. for runtime.Preload. The script cache is per server, so one Preload covers every database.", in.Name))
}

// errorVars declares one runtime.ErrorCode per distinct declared error code.
func (b *modelBuilder) errorVars() []errorVar {
	users := map[string][]string{}
	docs := map[string][]string{}
	for _, s := range b.scripts {
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
	var out []errorVar
	for _, c := range codes {
		out = append(out, errorVar{Doc: wrapped(errDoc(c, users[c], docs[c])), Name: errorVarName(c), Code: c})
		b.decls.add(fileScripts, errorVarName(c))
	}
	return out
}

// errorVarName is the Go name of error code c: NOT_OWNER is ErrNotOwner.
func errorVarName(c string) string { return "Err" + exported(strings.ToLower(c)) }

// errDoc is the doc of an error code: the sentence of the one script that
// declares it, or where to read what it means when several do.
func errDoc(code string, users, docs []string) string {
	name := errorVarName(code)
	if len(docs) == 1 {
		if d := strings.TrimSpace(docs[0]); d != "" {
			return fmt.Sprintf("%s is the error reply %s of %s: %s", name, code, strings.Join(users, ", "), lowerFirst(d))
		}
		return fmt.Sprintf("%s is the error reply %s of %s.", name, code, strings.Join(users, ", "))
	}
	return fmt.Sprintf("%s is the error reply %s, declared by %d scripts; the method of each says what it means there.", name, code, len(users))
}
