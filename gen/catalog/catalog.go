// Package catalog renders the keyspace catalogue of a spec as one static HTML
// page with no external asset: instances, their databases and key patterns
// (type, TTL rule, owner, source), scripts and the keys each reads or writes,
// users and their grants (the derived aclfile), channels, and a drawn map
// (inline SVG) of which user may run which script on which keys.
package catalog

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hanchat/luagen/gen/acl"
	"github.com/hanchat/luagen/gen/compiler"
	"github.com/hanchat/luagen/gen/keyaccess"
	"github.com/hanchat/luagen/gen/keyspec"
)

// Options choose what the page shows.
type Options struct {
	// Instances limits the page to these instances; empty: every instance.
	Instances []string
}

// page is what the template renders.
type page struct {
	Spec      string
	Instances []*instanceView
	Keys      []*keyView
	Scripts   []*scriptView
	Users     []*userView
	Channels  []*channelView
	Map       mapView
	// Matrix is scripts (rows) by keys (columns): "R", "W", "RW" or "".
	MatrixKeys []*keyView
	Matrix     []matrixRow
}

type instanceView struct {
	Name, Topology, Mode, Source, Prefix string
	DBs                                  []*dbView
}

type dbView struct {
	ID, Name, URLEnv, User, UserAnchor, Server, Legacy, Doc, Source string
	Index                                                           int
	Keys                                                            []*keyView
}

type keyView struct {
	Anchor, Name, Pattern, Values, TTL, Owner, OwnerAnchor, Source, Doc, Kind, DB string
	Scripts                                                                       []scriptRef
}

type scriptRef struct {
	Anchor, Name, Mode string
}

type scriptView struct {
	Anchor, Name, Instance, DB, Mode, User, UserAnchor, SHA1, Doc, Source, Reply string
	ReadOnly                                                                     bool
	Keys                                                                         []keyUse
	Argv                                                                         []string
	Commands                                                                     []string
	Errors                                                                       []string
}

type keyUse struct {
	Position            int
	Where, Access       string // Where: "KEYS[1] lock", "derived from KEYS[2] jobs", ...
	KeyAnchor, KeyName  string
	KeyPattern, Command string
}

type userView struct {
	Anchor, Name, Instance, Line string
	Prefixes                     []string
	Channels                     []string
	Keys                         []*keyView
	Scripts                      []scriptRef
	Generated                    bool
}

type channelView struct {
	Anchor, Name, Instance, Pattern, Source, Server string
	MaxBytes                                        int
	Users                                           []scriptRef // Anchor and Name of each user
}

type matrixRow struct {
	Script *scriptView
	Cells  []string
}

func keyAnchor(name string) string            { return "key-" + name }
func scriptAnchor(name string) string         { return "script-" + name }
func userAnchor(instance, name string) string { return "user-" + instance + "-" + name }
func channelAnchor(name string) string        { return "channel-" + name }

// Write renders the catalogue into dir/index.html (dir is made when missing).
func Write(dir string, spec *keyspec.Spec, srcs map[string]*compiler.Source, o Options) (string, error) {
	html, err := Render(spec, srcs, o)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, "index.html")
	if err := os.WriteFile(path, html, 0o644); err != nil {
		return "", err
	}
	return path, nil
}

// Render is the catalogue page. An instance named in o that the spec lacks is
// an error.
func Render(spec *keyspec.Spec, srcs map[string]*compiler.Source, o Options) ([]byte, error) {
	for _, name := range o.Instances {
		if spec.Instance(name) == nil {
			var have []string
			for _, in := range spec.Instances {
				have = append(have, in.Name)
			}
			return nil, fmt.Errorf("%s: no instance %q (the spec has %s)", spec.File, name, strings.Join(have, ", "))
		}
	}
	p, err := build(spec, srcs, o)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := pageTemplate.Execute(&b, p); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func shown(o Options, in *keyspec.Instance) bool {
	if len(o.Instances) == 0 {
		return true
	}
	for _, n := range o.Instances {
		if n == in.Name {
			return true
		}
	}
	return false
}

func build(spec *keyspec.Spec, srcs map[string]*compiler.Source, o Options) (*page, error) {
	p := &page{Spec: spec.File}
	keys := map[string]*keyView{}
	for _, in := range spec.Instances {
		if !shown(o, in) {
			continue
		}
		iv := &instanceView{Name: in.Name, Topology: in.Topology, Mode: in.Mode, Source: in.Source}
		if in.Prefix != nil {
			iv.Prefix = fmt.Sprintf("bound at run time from %s (default from %s), at most %d bytes", orDash(in.Prefix.Env), orDash(in.Prefix.DefaultFrom), in.Prefix.MaxLen)
		}
		for _, d := range in.DBs {
			dv := &dbView{ID: d.ID(), Name: d.Name, Index: d.Index, URLEnv: d.URLEnv, Doc: d.Doc, Source: d.Source, Server: serverName(d.ServerOf())}
			if d.User != nil {
				dv.User, dv.UserAnchor = d.User.Name, userAnchor(in.Name, d.User.Name)
			}
			if d.Legacy != nil {
				dv.Legacy = d.Legacy.State
			}
			for _, k := range spec.Keys {
				if k.DB != d || !k.Live() {
					continue
				}
				kv := &keyView{Anchor: keyAnchor(k.Name), Name: k.Name, Pattern: k.Pattern.Raw, Values: strings.Join(k.Value, ", "), TTL: ttlText(k.TTL),
					Source: k.Source, Doc: k.Doc, Kind: k.Kind, DB: d.ID()}
				if d.User != nil {
					kv.Owner, kv.OwnerAnchor = d.User.Name, userAnchor(in.Name, d.User.Name)
				}
				dv.Keys = append(dv.Keys, kv)
				keys[k.Name] = kv
				p.Keys = append(p.Keys, kv)
			}
			iv.DBs = append(iv.DBs, dv)
		}
		p.Instances = append(p.Instances, iv)
	}
	for _, s := range spec.Scripts {
		if !s.Live() || !shown(o, s.Instance) {
			continue
		}
		sv := &scriptView{Anchor: scriptAnchor(s.ID), Name: s.Name, Instance: s.Instance.Name, Mode: s.Instance.Mode, ReadOnly: s.ReadOnly, Doc: s.Doc, Source: s.Source, Reply: replyText(s.Reply)}
		if s.DB != nil {
			sv.DB = s.DB.ID()
			if s.DB.User != nil {
				sv.User, sv.UserAnchor = s.DB.User.Name, userAnchor(s.Instance.Name, s.DB.User.Name)
			}
		}
		for i, a := range s.Argv {
			opt := ""
			if a.Optional {
				opt = ", optional"
			}
			sv.Argv = append(sv.Argv, fmt.Sprintf("ARGV[%d] %s (%s%s)", i+1, a.Name, a.Type, opt))
		}
		for _, e := range s.Errors {
			sv.Errors = append(sv.Errors, e.Code)
		}
		src := srcs[s.ID]
		if src == nil {
			return nil, fmt.Errorf("script %s: no Lua loaded", s.Name)
		}
		sv.SHA1 = src.SHA1
		seen := map[string]bool{}
		for _, c := range src.Commands {
			if c != nil && !seen[c.Display()] {
				seen[c.Display()] = true
				sv.Commands = append(sv.Commands, c.Display())
			}
		}
		sort.Strings(sv.Commands)
		for _, u := range keyaccess.Uses(src) {
			var cmds []string
			for _, c := range u.Commands {
				cmds = append(cmds, strings.ToUpper(strings.ReplaceAll(c, "|", " ")))
			}
			sv.Keys = append(sv.Keys, keyUse{Position: u.Position, Where: u.Where(s), Access: u.Mode(), KeyAnchor: keyAnchor(u.Key.Name), KeyName: u.Key.Name, KeyPattern: u.Key.Pattern.Raw, Command: strings.Join(cmds, ", ")})
			if kv := keys[u.Key.Name]; kv != nil {
				kv.Scripts = append(kv.Scripts, scriptRef{Anchor: sv.Anchor, Name: s.Name, Mode: u.Mode()})
			}
		}
		p.Scripts = append(p.Scripts, sv)
	}
	if err := users(p, spec, srcs, o, keys); err != nil {
		return nil, err
	}
	for _, c := range spec.Channels {
		if !shown(o, c.Instance) {
			continue
		}
		cv := &channelView{Anchor: channelAnchor(c.Name), Name: c.Name, Instance: c.Instance.Name, Pattern: c.Pattern.Raw, Source: c.Source, MaxBytes: c.MaxBytes, Server: serverName(c.ServerOf())}
		for _, u := range spec.UsersOf(c.Instance) {
			for _, pr := range u.ChannelPrefixes {
				if pr.Covers(c.Pattern) {
					cv.Users = append(cv.Users, scriptRef{Anchor: userAnchor(c.Instance.Name, u.Name), Name: u.Name})
					break
				}
			}
		}
		p.Channels = append(p.Channels, cv)
	}
	p.MatrixKeys = p.Keys
	for _, sv := range p.Scripts {
		row := matrixRow{Script: sv, Cells: make([]string, len(p.Keys))}
		for i, kv := range p.Keys {
			for _, u := range sv.Keys {
				if u.KeyName == kv.Name {
					row.Cells[i] = mergeAccess(row.Cells[i], u.Access)
				}
			}
		}
		p.Matrix = append(p.Matrix, row)
	}
	p.Map = drawMap(p)
	return p, nil
}

// users fills the users with their derived aclfile lines (every server of
// their instance), the keys their prefixes grant and the scripts they run.
func users(p *page, spec *keyspec.Spec, srcs map[string]*compiler.Source, o Options, keys map[string]*keyView) error {
	for _, in := range spec.Instances {
		if !shown(o, in) {
			continue
		}
		lines := map[string][]string{}
		var order []string
		for _, srv := range in.ServerNames() {
			derived, _, err := acl.DeriveServer(spec, in, srv, srcs, nil)
			if err != nil {
				return fmt.Errorf("instance %s: %w", in.Name, err)
			}
			for _, u := range derived {
				if _, ok := lines[u.Name]; !ok {
					order = append(order, u.Name)
				}
				line := u.Line()
				if srv != "" {
					line = "# server " + srv + "\n" + line
				}
				lines[u.Name] = append(lines[u.Name], line)
			}
		}
		for _, name := range order {
			uv := &userView{Anchor: userAnchor(in.Name, name), Name: name, Instance: in.Name, Line: strings.Join(lines[name], "\n"), Generated: true}
			for _, u := range spec.UsersOf(in) {
				if u.Name != name {
					continue
				}
				uv.Generated = false
				for _, pr := range u.LivePrefixes() {
					uv.Prefixes = append(uv.Prefixes, pr.Glob())
				}
				for _, pr := range u.ChannelPrefixes {
					uv.Channels = append(uv.Channels, pr.Glob())
				}
				for _, k := range spec.KeysOf(in) {
					for _, pr := range u.LivePrefixes() {
						if pr.Covers(k.Pattern) && keys[k.Name] != nil {
							uv.Keys = append(uv.Keys, keys[k.Name])
							break
						}
					}
				}
			}
			for _, sv := range p.Scripts {
				if sv.User == name {
					uv.Scripts = append(uv.Scripts, scriptRef{Anchor: sv.Anchor, Name: sv.Name})
				}
			}
			p.Users = append(p.Users, uv)
		}
	}
	return nil
}

func mergeAccess(cell, mode string) string {
	r := strings.Contains(cell, "R") || strings.Contains(mode, "read")
	w := strings.Contains(cell, "W") || strings.Contains(mode, "write")
	switch {
	case r && w:
		return "RW"
	case w:
		return "W"
	case r:
		return "R"
	}
	return ""
}

func serverName(s *keyspec.Server) string {
	if s == nil || s.Name == "" {
		return ""
	}
	return s.Name
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func ttlText(t keyspec.TTL) string {
	switch t.Rule {
	case keyspec.TTLFixed:
		return "fixed " + keyspec.FormatDuration(t.Value)
	case keyspec.TTLHeartbeat:
		return "heartbeat " + keyspec.FormatDuration(t.Value)
	case keyspec.TTLWindowJitter:
		return "window + jitter ≤ " + keyspec.FormatDuration(t.MaxJitter)
	case keyspec.TTLClamped:
		return "clamped ≤ " + keyspec.FormatDuration(t.Max) + " (from " + t.From + ")"
	case keyspec.TTLNone:
		return "none: " + t.Reason
	}
	return t.Rule
}

func replyText(r keyspec.Reply) string {
	if r.Value != nil {
		return fieldText(r.Value)
	}
	var parts []string
	for _, f := range r.Fields {
		parts = append(parts, fieldText(f))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// fieldText is a reply field's name and type: "counts list of int".
func fieldText(f *keyspec.Field) string {
	if f.Of != "" {
		return f.Name + " " + f.Type + " of " + f.Of
	}
	return f.Name + " " + f.Type
}
