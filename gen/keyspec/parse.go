package keyspec

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hanchat/luagen/gen/rediscmd"
	"github.com/hanchat/luagen/gen/strictyaml"
	"github.com/hanchat/luagen/runtime/keypart"
)

// MaxSpecBytes is the largest spec luagen reads: 1 MiB, about twenty times a
// real service's spec of some sixty keys and thirty scripts. Parsing is linear but YAML decoding takes about forty times a
// file's size in memory (a 50 MB spec took 1.9 GB and 20 s), so a larger file
// is refused before it is decoded.
const MaxSpecBytes = 1 << 20

// Load reads and parses a spec file (ReadFile, then Parse).
func Load(path string) (*Spec, error) {
	src, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(filepath.Base(path), src)
}

// ReadFile reads a spec file: a regular file (not a device, a FIFO or a
// directory) of at most MaxSpecBytes, of which it reads no more than that.
func ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("keyspec: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("keyspec: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, &Error{Pos: Pos{File: filepath.Base(path), Line: 1}, Msg: fmt.Sprintf("not a regular file (%s)", fi.Mode().Type())}
	}
	src, err := io.ReadAll(io.LimitReader(f, MaxSpecBytes+1))
	if err != nil {
		return nil, fmt.Errorf("keyspec: %w", err)
	}
	if err := checkSize(filepath.Base(path), src); err != nil {
		return nil, err
	}
	return src, nil
}

// checkSize refuses a spec of more than MaxSpecBytes, naming the line where it
// passes the cap.
func checkSize(file string, src []byte) error {
	if len(src) <= MaxSpecBytes {
		return nil
	}
	line := 1 + bytes.Count(src[:MaxSpecBytes], []byte("\n"))
	return List{&Error{Pos: Pos{File: file, Line: line}, Msg: fmt.Sprintf("the spec passes luagen's size cap of %d bytes (1 MiB) here: split the service, or raise keyspec.MaxSpecBytes", MaxSpecBytes)}}
}

// Parse parses and validates a spec. file is the name errors use ("keyspec.yaml").
// The error, when not nil, is a List of the problems found, the first of each
// entry only (the others are mostly its knock-on effects); it matches ErrInvalid.
// It refuses a spec over MaxSpecBytes, one that is not UTF-8 or holds a control
// character (a tab aside) or a bidirectional-text override, and one of more than
// one YAML document, each at its line.
func Parse(file string, src []byte) (*Spec, error) {
	if err := checkSize(file, src); err != nil {
		return nil, err
	}
	if err := checkText(file, src); err != nil {
		return nil, err
	}
	if open := todos(file, src); len(open) > 0 {
		return nil, open
	}
	raw, ln, err := decodeRaw(file, src)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(src)
	p := &parser{file: file, ln: ln, spec: &Spec{Pos: Pos{File: file, Line: 1}, SHA256: hex.EncodeToString(sum[:]), Version: raw.Version}}
	p.build(raw)
	if len(p.errs) > 0 {
		return nil, p.errs.firstPerEntry().sorted()
	}
	return p.spec, nil
}

// Known value types of keys.
var valueTypes = set(ValueString, ValueCounter, ValueHash, ValueList, ValueSet, ValueZSet, ValueStream, ValueMsgpack, ValueJSON, ValuePrefix)

// Forbidden shapes a forbid rule may name.
var shapes = set(ShapeGetIncrement)

var (
	envRe = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)
	// codeRe: an error reply's first word, the code callers match it by:
	// an upper-case code by convention (NOT_OWNER), or the first word of a
	// free-text reply ("task id not found": task).
	codeRe = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`)
	// prefixRe: literal text of names, braces included (a key prefix may
	// hold a fixed hash tag, "{bull}:"); never a glob character or a space.
	prefixRe = regexp.MustCompile(`^[A-Za-z0-9._:{}-]+$`)
	// kindRe: a kind is free text of one word, so that forbid rules can match it.
	kindRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)
	wordRe = regexp.MustCompile(`^[a-z]+$`)
)

// source resolves an entry's source and its deprecated alias seed.
func (p *parser) source(path, entry, seed, source string) string {
	if seed == "" {
		return source
	}
	if source != "" {
		p.errf(path, entry, "seed and source are both set: seed is the old name of source; keep source")
		return source
	}
	at := p.pos(path + ".seed")
	p.spec.Deprecated = append(p.spec.Deprecated, Deprecation{Pos: at, Msg: fmt.Sprintf("%s: seed is deprecated; rename it to source", orDefault(entry, "the spec"))})
	return seed
}

// kind checks a key's or script's kind: optional free text of one word.
func (p *parser) kind(path, entry, kind string) {
	if kind != "" && !kindRe.MatchString(kind) {
		p.errf(path+".kind", entry, "kind %q: want one word of [A-Za-z0-9_.-] (forbid rules match it exactly)", kind)
	}
}

type parser struct {
	file string
	ln   strictyaml.Lines
	spec *Spec
	errs List

	instances map[string]*Instance
	dbs       map[string]*DB
	users     map[string]*User
	enums     map[string]*Enum
	keys      map[string]*Key
	channels  map[string]*Channel
	// errorCodes are, per instance, the error codes its scripts declare by
	// their Go name's spelling (lower case), for codes differing only in case.
	errorCodes map[*Instance]map[string]string
}

func (p *parser) pos(path string) Pos {
	return Pos{File: p.file, Line: p.ln.Line(path)}
}

func (p *parser) errf(path, entry, format string, args ...any) {
	p.errs = append(p.errs, &Error{Pos: p.pos(path), Entry: entry, Msg: fmt.Sprintf(format, args...)})
}

// errfFollows is errf for an error about a property of key k, which the entry
// refers to: dropped when k has an error of its own (Error.follows).
func (p *parser) errfFollows(k *Key, path, entry, format string, args ...any) {
	p.errf(path, entry, format, args...)
	p.errs[len(p.errs)-1].follows = fmt.Sprintf("key %q", k.Name)
}

func (p *parser) build(raw *rawSpec) {
	if raw.Version != 1 {
		p.errf("version", "", "version must be 1, got %d", raw.Version)
	}
	for i, f := range raw.Forbid {
		fb := p.forbid(fmt.Sprintf("forbid[%d]", i), "", f)
		fb.SpecWide = true
		p.spec.Forbid = append(p.spec.Forbid, fb)
	}
	p.buildEnums(raw)
	p.buildInstances(raw)
	p.buildUsers(raw)
	p.resolveDBUsers(raw)
	p.buildKeys(raw)
	p.buildChannels(raw)
	p.buildScripts(raw)
	p.spec.ScriptsLine = p.ln["scripts"]
	p.deploymentFamilies()
	p.checkUserGrants()
	p.checkOverlaps()
	p.checkReplyTypes()
	p.buildBreaking(raw)
	p.buildAlerts(raw)
}

// deploymentFamilies sets, on each instance with a deployment prefix, the
// segment names its prefixes may not hold (DeploymentPrefix.Reserved) and the
// families the empty prefix of each of its users grants (Prefix.Families). A
// key or channel pattern there must start with a literal segment: a pattern
// starting with a placeholder has no family the ACL could grant without
// reaching the names of a deployment nested in this one.
func (p *parser) deploymentFamilies() {
	for _, in := range p.spec.Instances {
		if in.Prefix == nil {
			continue
		}
		reserved := map[string]bool{}
		keyFam := map[*User]map[string]bool{} // by the user of the key's database
		chanFam := map[string]bool{}
		for _, k := range p.spec.Keys {
			if k.DB == nil || k.DB.Instance != in {
				continue
			}
			if f := k.Pattern.Family(); f != "" {
				if keyFam[k.DB.User] == nil {
					keyFam[k.DB.User] = map[string]bool{}
				}
				keyFam[k.DB.User][f] = true
				reserved[FamilyReserved(f)] = true
			} else {
				p.errs = append(p.errs, &Error{Pos: k.Pos, Entry: fmt.Sprintf("key %q", k.Name), Msg: fmt.Sprintf(
					"pattern %q starts with a placeholder: on an instance with a deployment prefix a pattern starts with literal text, its family (cache: of cache:{name}), which the ACL grants and no deployment prefix may hold, so that no deployment reaches the names of one nested in it", k.Pattern.Raw)})
			}
		}
		for _, c := range p.spec.Channels {
			if c.Instance != in {
				continue
			}
			if f := c.Pattern.Family(); f != "" {
				chanFam[f] = true
				reserved[FamilyReserved(f)] = true
			} else {
				p.errs = append(p.errs, &Error{Pos: c.Pos, Entry: fmt.Sprintf("channel %q", c.Name), Msg: fmt.Sprintf(
					"pattern %q starts with a placeholder: on an instance with a deployment prefix a pattern starts with literal text, its family", c.Pattern.Raw)})
			}
		}
		for _, u := range p.spec.Users {
			if u.Instance != in {
				continue
			}
			for _, prs := range []struct {
				list []*Prefix
				fam  map[string]bool
			}{{u.KeyPrefixes, keyFam[u]}, {u.ChannelPrefixes, chanFam}} {
				for _, pr := range prs.list {
					if pr.Prefix == "" {
						pr.Families = slices.Sorted(maps.Keys(prs.fam))
					} else if r := FamilyReserved(pr.Glob()); r != "" {
						reserved[r] = true
					}
				}
			}
		}
		in.Prefix.Reserved = slices.Sorted(maps.Keys(reserved))
	}
}

// checkUserGrants refuses a user the aclfile would grant nothing, or not what
// its prefixes say: a key is granted to the user of its database alone, so a
// key prefix covering another user's key grants this user nothing of it (its
// aclfile line had no key pattern, and nothing said so), and a user of no
// database with no channel has nothing to be granted.
func (p *parser) checkUserGrants() {
	for _, u := range p.spec.Users {
		if u.Instance == nil {
			continue
		}
		owns := false
		for _, d := range u.Instance.DBs {
			owns = owns || d.User == u
		}
		for _, pr := range u.KeyPrefixes {
			if pr.Prefix == "" {
				continue // a deployment's keys of the user's own databases
			}
			for _, k := range p.spec.Keys {
				if k.DB == nil || k.DB.Instance != u.Instance || k.DB.User == nil || k.DB.User == u || (pr.LegacyDB != nil && pr.LegacyDB != k.DB) || !pr.Covers(k.Pattern) {
					continue
				}
				p.errs = append(p.errs, &Error{Pos: pr.Pos, Entry: fmt.Sprintf("user %q", u.Name), Msg: fmt.Sprintf(
					"key prefix %q grants key %q of %s, whose user is %s: a key is granted to the user of its database alone, so %s would get no key pattern for it (give %s a database of its own, or drop the prefix)",
					pr.Prefix, k.Name, k.DB.ID(), k.DB.User.Name, u.Name, u.Name)})
				break
			}
		}
		if !owns && len(u.ChannelPrefixes) == 0 {
			p.errs = append(p.errs, &Error{Pos: u.Pos, Entry: fmt.Sprintf("user %q", u.Name), Msg: fmt.Sprintf(
				"the user of no database of %s, with no channel: its aclfile line would grant nothing (name it as a database's user, or drop it)", u.Instance.Name)})
		}
	}
}

// checkReplyTypes: scripts that share a reply type_name must declare the same fields.
func (p *parser) checkReplyTypes() {
	type owner struct {
		s *Script
		r Reply
	}
	first := map[string]owner{}
	for _, s := range p.spec.Scripts {
		for _, r := range s.Replies() {
			n := r.TypeName
			if n == "" {
				continue
			}
			if f, ok := first[n]; ok {
				if f.r.Signature() != r.Signature() {
					p.errs = append(p.errs, &Error{Pos: r.Pos, Entry: fmt.Sprintf("script %q", s.ID), Msg: fmt.Sprintf("reply type_name %s is also script %q's (line %d), with other fields", n, f.s.ID, f.r.Line)})
				}
				continue
			}
			first[n] = owner{s, r}
		}
	}
	// List elements that share a type_name must have the same fields too.
	elems := map[string]*Field{}
	for _, s := range p.spec.Scripts {
		s.Reply.WalkFields(func(f *Field) {
			if f.Type != ReplyList || f.TypeName == "" {
				return
			}
			var sig strings.Builder
			writeSignature(&sig, f.Fields)
			if g, ok := elems[f.TypeName]; ok {
				var other strings.Builder
				writeSignature(&other, g.Fields)
				if sig.String() != other.String() {
					p.errs = append(p.errs, &Error{Pos: f.Pos, Entry: fmt.Sprintf("script %q", s.Name), Msg: fmt.Sprintf("list type_name %s is also used at line %d, with other fields", f.TypeName, g.Line)})
				}
				return
			}
			elems[f.TypeName] = f
		})
	}
}

func (p *parser) buildEnums(raw *rawSpec) {
	p.enums = map[string]*Enum{}
	for _, name := range slices.Sorted(maps.Keys(raw.Enums)) {
		r := raw.Enums[name]
		path, entry := "enums."+name, fmt.Sprintf("enum %q", name)
		e := &Enum{Pos: p.pos(path), Name: name, Source: p.source(path, entry, r.Seed, r.Source), Values: r.Values}
		if !identOK(name) {
			p.errf(path, entry, "name must be [a-z][a-z0-9_]*")
		}
		if len(r.Values) == 0 {
			p.errf(path, entry, "values is empty: an enum is a bounded, non-empty allow-list")
		}
		seen := map[string]bool{}
		for i, v := range r.Values {
			if seen[v] {
				p.errf(fmt.Sprintf("%s.values[%d]", path, i), entry, "value %q appears twice", v)
			}
			seen[v] = true
		}
		p.enums[name] = e
		p.spec.Enums = append(p.spec.Enums, e)
	}
}

func (p *parser) buildInstances(raw *rawSpec) {
	p.instances, p.dbs = map[string]*Instance{}, map[string]*DB{}
	if len(raw.Instances) == 0 {
		p.errf("instances", "", "no instances declared")
	}
	envs := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(raw.Instances)) {
		r := raw.Instances[name]
		path, entry := "instances."+name, fmt.Sprintf("instance %q", name)
		in := &Instance{Pos: p.pos(path), Name: name, Source: p.source(path, entry, r.Seed, r.Source), Topology: r.Topology}
		if !identOK(name) {
			p.errf(path, entry, "name must be [a-z][a-z0-9_]*")
		}
		switch in.Client = r.Client; r.Client {
		case "":
			in.Client = ClientGoRedis
		case ClientGoRedis, ClientRueidis:
		default:
			p.errf(path+".client", entry, "client %q: want go-redis or rueidis", r.Client)
		}
		switch r.Topology {
		case TopologyStandalone, TopologyCluster:
		case "":
			p.errf(path, entry, "topology is missing: standalone or cluster")
		default:
			p.errf(path+".topology", entry, "topology %q: want standalone or cluster", r.Topology)
		}
		switch in.Mode = r.Mode; r.Mode {
		case ModeEvalSHA, ModeFunctions:
		case "":
			in.Mode = ModeEvalSHA
		default:
			p.errf(path+".mode", entry, "mode %q: want evalsha or functions", r.Mode)
		}
		in.Server = p.server(path+".server", entry, r.Server)
		for _, sn := range slices.Sorted(maps.Keys(r.Servers)) {
			sp := path + ".servers." + sn
			rs := r.Servers[sn]
			srv := p.server(sp, fmt.Sprintf("%s server %q", entry, sn), &rs)
			srv.Name = sn
			if !identOK(sn) {
				p.errf(sp, entry, "server %q: name must be [a-z][a-z0-9_]*", sn)
			}
			in.Servers = append(in.Servers, &srv)
		}
		if len(r.Servers) > 0 && r.Topology == TopologyCluster {
			p.errf(path+".servers", entry, "servers: a cluster instance is one cluster; to split it, declare another instance")
		}
		in.Prefix = p.deploymentPrefix(path, entry, r.DeploymentPrefix)
		in.CoverageFloor = p.coverageFloor(path, entry, r.CoverageFloor)
		for i, f := range r.Forbid {
			in.Forbid = append(in.Forbid, p.forbid(fmt.Sprintf("%s.forbid[%d]", path, i), entry, f))
		}
		in.Forbid = append(in.Forbid, p.spec.Forbid...)
		if len(r.DBs) == 0 {
			p.errf(path, entry, "no dbs declared")
		}
		indexes := map[int]string{}
		for _, dbName := range slices.Sorted(maps.Keys(r.DBs)) {
			rd := r.DBs[dbName]
			dp, dentry := path+".dbs."+dbName, fmt.Sprintf("db %s.%s", name, dbName)
			d := &DB{Pos: p.pos(dp), Instance: in, Name: dbName, URLEnv: rd.URLEnv, Source: p.source(dp, dentry, rd.Seed, rd.Source), Doc: rd.Doc}
			if !identOK(dbName) {
				p.errf(dp, dentry, "name must be [a-z][a-z0-9_]*")
			}
			if rd.Index == nil {
				p.errf(dp, dentry, "index is missing")
			} else {
				d.Index = *rd.Index
				if d.Index < 0 || d.Index > 15 {
					p.errf(dp+".index", dentry, "index %d: want 0..15", d.Index)
				}
				if other, dup := indexes[d.Index]; dup {
					p.errf(dp+".index", dentry, "index %d is also db %s", d.Index, other)
				}
				indexes[d.Index] = dbName
			}
			if !envRe.MatchString(rd.URLEnv) {
				p.errf(dp+".url_env", dentry, "url_env %q: want an environment variable name [A-Z][A-Z0-9_]*", rd.URLEnv)
			} else if other, dup := envs[rd.URLEnv]; dup {
				p.errf(dp+".url_env", dentry, "url_env %s is also used by db %s", rd.URLEnv, other)
			}
			envs[rd.URLEnv] = d.ID()
			if rd.Server != "" {
				if d.Server = in.ServerNamed(rd.Server); d.Server == nil {
					p.errf(dp+".server", dentry, "server %q is not declared under %s's servers", rd.Server, name)
				}
			}
			if rd.Legacy != nil {
				lp := dp + ".legacy"
				lg := &Legacy{Pos: p.pos(lp), State: rd.Legacy.State}
				if lg.State != LegacyAlive && lg.State != LegacyCutOver {
					p.errf(lp, dentry, "legacy state %q: want %s or %s", lg.State, LegacyAlive, LegacyCutOver)
				}
				d.Legacy = lg
			}
			in.DBs = append(in.DBs, d)
			p.dbs[d.ID()] = d
		}
		sort.Slice(in.DBs, func(i, j int) bool { return in.DBs[i].Index < in.DBs[j].Index })
		if in.Split() {
			for _, srv := range append([]*Server{&in.Server}, in.Servers...) {
				n := 0
				for _, d := range in.DBs {
					if d.ServerOf() == srv {
						n++
					}
				}
				if n > 0 {
					continue
				}
				if srv.Name == "" {
					p.errf(path, entry, "every database has a server of its own: leave at least one on the instance's own server (server:), the others are under servers:")
				} else {
					p.errf(path+".servers."+srv.Name, entry, "server %q holds no database: put server: %s on the databases it holds, or remove it", srv.Name, srv.Name)
				}
			}
		}
		p.instances[name] = in
		p.spec.Instances = append(p.spec.Instances, in)
	}
}

// evictionPolicies are Redis's maxmemory-policy values.
var evictionPolicies = set("noeviction", "allkeys-lru", "allkeys-lfu", "allkeys-random", "volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl")

// server resolves a server section (path is its own path): the optional
// instance's own, or one of its servers.
func (p *parser) server(sp, entry string, r *rawServer) Server {
	if r == nil {
		return Server{} // optional: luagen config refuses an instance without one
	}
	s := Server{Pos: p.pos(sp), Source: r.Source, Doc: r.Doc, Persistence: r.Persistence.Mode, PersistenceSource: p.source(sp+".persistence", entry+" persistence", r.Persistence.Seed, r.Persistence.Source),
		EvictionPolicy: r.Eviction.Policy, EvictionReason: r.Eviction.Reason, TBD: r.TBD}
	if s.Persistence != PersistAOF && s.Persistence != PersistNone {
		p.errf(sp+".persistence", entry, "persistence mode %q: want %s or %s", s.Persistence, PersistAOF, PersistNone)
	}
	if s.PersistenceSource == "" {
		p.errf(sp+".persistence", entry, "persistence needs a source: why this mode (what may be lost, what rebuilds it)")
	}
	if !evictionPolicies[s.EvictionPolicy] {
		p.errf(sp+".eviction", entry, "eviction policy %q: want one of %s", s.EvictionPolicy, keysOf(evictionPolicies))
	}
	if s.EvictionReason == "" {
		p.errf(sp+".eviction", entry, "eviction needs a reason")
	}
	return s
}

// deploymentPrefix resolves an instance's optional deployment_prefix.
func (p *parser) deploymentPrefix(path, entry string, r *rawDeploymentPrefix) *DeploymentPrefix {
	if r == nil {
		return nil
	}
	dp := path + ".deployment_prefix"
	d := &DeploymentPrefix{Pos: p.pos(dp), Env: r.Env, DefaultFrom: r.DefaultFrom, MaxLen: r.MaxLen, Source: r.Source}
	if d.MaxLen == 0 {
		d.MaxLen = DefaultPrefixMaxLen
	}
	if d.MaxLen < 2 || d.MaxLen > MaxPrefixMaxLen {
		p.errf(dp+".max_len", entry, "deployment_prefix max_len %d: want 2..%d", d.MaxLen, MaxPrefixMaxLen)
	}
	for field, v := range map[string]string{"env": r.Env, "default_from": r.DefaultFrom} {
		if v != "" && !envRe.MatchString(v) {
			p.errf(dp+"."+field, entry, "deployment_prefix %s %q: want an environment variable name [A-Z][A-Z0-9_]*", field, v)
		}
	}
	return d
}

// forbid resolves one forbid rule of an instance.
func (p *parser) forbid(fp, entry string, f rawForbid) Forbid {
	fb := Forbid{Pos: p.pos(fp), Kind: f.Kind, Words: f.Words, Value: f.Value, Commands: f.Commands, Shape: f.Shape, UnlessKind: f.UnlessKind,
		TTL: f.TTL, Unbounded: f.Unbounded, Source: p.source(fp, orDefault(entry, "the spec")+" forbid", f.Seed, f.Source)}
	n := 0
	for _, set := range []bool{f.Kind != "", f.Value != "", len(f.Commands) > 0, f.Shape != "", f.TTL != "", f.Unbounded != ""} {
		if set {
			n++
		}
	}
	if n != 1 {
		p.errf(fp, entry, "forbid: set exactly one of kind, value, commands, shape, ttl, unbounded (got %d)", n)
	}
	switch f.TTL {
	case "", ForbidTTLNone, ForbidTTLUnbounded:
	default:
		p.errf(fp, entry, "forbid ttl %q: want none (every key expires) or unbounded (a key that never expires declares a bound)", f.TTL)
	}
	switch f.Unbounded {
	case "", ValueStream, ValueList:
	default:
		p.errf(fp, entry, "forbid unbounded %q: want stream or list (the value types with a bound: max_len, retention)", f.Unbounded)
	}
	if fb.Source == "" {
		p.errf(fp, entry, "forbid: say where the rule comes from (source)")
	}
	if f.Kind != "" && !kindRe.MatchString(f.Kind) {
		p.errf(fp, entry, "forbid kind %q: want one word of [A-Za-z0-9_.-]", f.Kind)
	}
	if len(f.Words) > 0 && f.Kind == "" {
		p.errf(fp, entry, "forbid: words apply to a kind rule")
	}
	for _, w := range f.Words {
		if !wordRe.MatchString(w) {
			p.errf(fp, entry, "forbid word %q: want lower-case letters (names are split into such words)", w)
		}
	}
	if f.Value != "" && !valueTypes[f.Value] {
		p.errf(fp, entry, "forbid value %q: want one of %s", f.Value, keysOf(valueTypes))
	}
	for i, c := range f.Commands {
		switch {
		case !commandRe.MatchString(c) || strings.Contains(c, "|"):
			p.errf(fmt.Sprintf("%s.commands[%d]", fp, i), entry, "forbid command %q: want a lower-case command name", c)
		case rediscmd.Lookup(c) == nil:
			p.errf(fmt.Sprintf("%s.commands[%d]", fp, i), entry, "forbid command %q: Redis %s has no such command", c, rediscmd.ServerVersion)
		}
	}
	if f.Shape != "" && !shapes[f.Shape] {
		p.errf(fp, entry, "forbid shape %q: want one of %s", f.Shape, keysOf(shapes))
	}
	if len(f.UnlessKind) > 0 && f.Shape == "" {
		p.errf(fp, entry, "forbid: unless_kind applies to a shape rule")
	}
	return fb
}

// Dangerous are the commands and subcommands ("client|kill") no generated ACL
// ever grants, whatever a script or the spec asks: those NeverGranted refuses,
// computed from Redis's own command table (gen/rediscmd).
var Dangerous = map[string]bool{}

func init() {
	for _, c := range rediscmd.All() {
		if NeverGranted(c) != "" {
			Dangerous[c.Name] = true
		}
	}
}

// NeverGranted says why no generated ACL grants c, or "" when a grant may be
// derived or declared: administrative commands (admin flag), the @dangerous ACL
// category (FLUSHALL, KEYS, INFO, SORT, MIGRATE, CLIENT LIST, ...), commands that
// run or manage scripts and functions (@scripting: the generated ACL grants
// EVALSHA of the declared scripts itself, and SCRIPT LOAD only to the loader), and commands that
// reach another database (MOVE, SWAPDB, COPY and MIGRATE with their DB option;
// SELECT is granted only through a user's select).
func NeverGranted(c *rediscmd.Command) string {
	switch {
	case c.Has(rediscmd.FlagAdmin):
		return "an administrative command (admin flag)"
	case c.InCategory("dangerous"):
		return "in Redis's @dangerous ACL category"
	case c.InCategory("scripting"):
		return "it runs or manages scripts (@scripting); the generated ACL grants EVALSHA of the declared scripts itself, SCRIPT LOAD only to the loader user"
	case c.Name == "move" || c.Name == "swapdb":
		return "it moves data into another database, which no key pattern of the ACL confines"
	case c.HasToken("DB"):
		return "its DB option writes into another database, which no ACL rule can forbid"
	case c.Name == "select":
		return "SELECT is granted through the user's select field, with its reason"
	}
	return ""
}

// ListsNames reports whether c tells the names of keys or channels it is not
// given, which ACL key and channel patterns do not filter: a keyspace read
// that takes no key (SCAN, KEYS, RANDOMKEY, DBSIZE) or a PUBSUB introspection
// subcommand (PUBSUB CHANNELS, NUMSUB, ...).
func ListsNames(c *rediscmd.Command) bool {
	if c == nil {
		return false
	}
	if p := c.Container(); p != nil && p.Name == "pubsub" {
		return true
	}
	return c.InCategory("keyspace") && c.Has(rediscmd.FlagReadonly) && len(c.KeySpecs) == 0
}

// unsafeSubcommands lists the subcommands of a container that NeverGranted refuses.
func unsafeSubcommands(c *rediscmd.Command) []string {
	var out []string
	for i := range c.Subcommands {
		if NeverGranted(&c.Subcommands[i]) != "" {
			out = append(out, c.Subcommands[i].Name)
		}
	}
	return out
}

// checkExtraCommand is what is wrong with an extra_commands entry, or "".
func checkExtraCommand(command, reason string) string {
	if !commandRe.MatchString(command) {
		return fmt.Sprintf("extra command %q: want a lower-case command, or command|subcommand", command)
	}
	c := rediscmd.Lookup(command)
	if c == nil {
		name, sub, isSub := strings.Cut(command, "|")
		switch parent := rediscmd.Lookup(name); {
		case isSub && parent != nil && parent.IsContainer():
			return fmt.Sprintf("extra command %q: %s has no subcommand %q in Redis %s (see COMMAND DOCS %s)", command, parent.Display(), sub, rediscmd.ServerVersion, name)
		case isSub && parent != nil:
			return fmt.Sprintf("extra command %q: %s has no subcommands; grant %q", command, parent.Display(), name)
		default:
			return fmt.Sprintf("extra command %q: Redis %s has no such command", command, rediscmd.ServerVersion)
		}
	}
	if why := NeverGranted(c); why != "" {
		return fmt.Sprintf("extra command %q is never granted: %s", command, why)
	}
	if unsafe := unsafeSubcommands(c); len(unsafe) > 0 {
		if len(unsafe) > 4 {
			unsafe = append(unsafe[:4], fmt.Sprintf("and %d more", len(unsafe)-4))
		}
		return fmt.Sprintf("extra command %q would grant all its subcommands, some never granted (%s): grant %s|<subcommand>", command, strings.Join(unsafe, ", "), command)
	}
	if reason == "" {
		return fmt.Sprintf("extra command %q needs a reason: a hand-added command says why", command)
	}
	return ""
}

var commandRe = regexp.MustCompile(`^[a-z][a-z_-]*(\|[a-z][a-z_-]*)?$`)

func (p *parser) buildUsers(raw *rawSpec) {
	p.users = map[string]*User{}
	for _, name := range slices.Sorted(maps.Keys(raw.Users)) {
		r := raw.Users[name]
		path, entry := "users."+name, fmt.Sprintf("user %q", name)
		u := &User{Pos: p.pos(path), Name: name, Source: p.source(path, entry, r.Seed, r.Source)}
		if !identOK(name) {
			p.errf(path, entry, "name must be [a-z][a-z0-9_]*")
		}
		u.Instance = p.instances[r.Instance]
		if u.Instance == nil {
			p.errf(path, entry, "instance %q is not declared", r.Instance)
		}
		if r.Select == nil {
			p.errf(path, entry, "select is missing: say whether the user may SELECT, and why")
		} else {
			u.Select = Select{Pos: p.pos(path + ".select"), Allow: r.Select.Allow, Reason: r.Select.Reason}
			if r.Select.Reason == "" {
				p.errf(path+".select", entry, "select needs a reason")
			}
		}
		u.KeyPrefixes = p.prefixes(path+".key_prefixes", entry, u, r.KeyPrefixes)
		u.ChannelPrefixes = p.prefixes(path+".channel_prefixes", entry, u, r.ChannelPrefixes)
		if len(u.KeyPrefixes) == 0 {
			p.errf(path, entry, "key_prefixes is empty")
		}
		for i, ex := range r.ExtraCommands {
			ep := fmt.Sprintf("%s.extra_commands[%d]", path, i)
			extra := ExtraCommand{Pos: p.pos(ep), Command: ex.Command, Reason: ex.Reason}
			if ex.LegacyDB != "" && u.Instance != nil {
				extra.LegacyDB = p.dbs[u.Instance.Name+"."+ex.LegacyDB]
				if extra.LegacyDB == nil || extra.LegacyDB.Legacy == nil {
					p.errf(ep, entry, "legacy_db %q is not a legacy db of %s", ex.LegacyDB, u.Instance.Name)
				}
			}
			u.ExtraCommands = append(u.ExtraCommands, extra)
			if msg := checkExtraCommand(ex.Command, ex.Reason); msg != "" {
				p.errf(ep, entry, "%s", msg)
			} else if c := rediscmd.Lookup(ex.Command); u.Instance != nil && u.Instance.Prefix != nil && ListsNames(c) {
				p.errf(ep, entry, "extra command %q lists the key or channel names of every deployment on the server (ACL key patterns do not filter it, and a name may be all another deployment needs): a user of an instance with a deployment prefix holds no such command", ex.Command)
			}
		}
		p.users[name] = u
		p.spec.Users = append(p.spec.Users, u)
	}
}

func (p *parser) prefixes(path, entry string, u *User, raw []rawPrefix) []*Prefix {
	var out []*Prefix
	for i, r := range raw {
		pp := fmt.Sprintf("%s[%d]", path, i)
		pr := &Prefix{Pos: p.pos(pp), Reason: r.Reason, Source: p.source(pp, entry, r.Seed, r.Source)}
		deployment := u.Instance != nil && u.Instance.Prefix != nil
		pr.Deployment = deployment
		switch {
		case r.Prefix == nil:
			p.errf(pp, entry, "prefix is missing")
		case *r.Prefix == "" && deployment:
			pr.Prefix = "" // the whole deployment
		case *r.Prefix == "":
			p.errf(pp, entry, "prefix is empty: only an instance with a deployment_prefix may grant all of it with \"\"")
		default:
			pr.Prefix = *r.Prefix
			if !prefixRe.MatchString(pr.Prefix) {
				p.errf(pp, entry, "prefix %q: want literal text [A-Za-z0-9._:{}-]+ (no glob character or space)", pr.Prefix)
			}
		}
		if pr.Source == "" && r.Reason == "" {
			p.errf(pp, entry, "prefix %q: say where it comes from (source) or why it is granted (reason)", pr.Prefix)
		}
		if r.LegacyDB != "" && u.Instance != nil {
			pr.LegacyDB = p.dbs[u.Instance.Name+"."+r.LegacyDB]
			if pr.LegacyDB == nil {
				p.errf(pp, entry, "legacy_db %q is not a db of %s", r.LegacyDB, u.Instance.Name)
			} else if pr.LegacyDB.Legacy == nil {
				p.errf(pp, entry, "legacy_db %q is not marked legacy", r.LegacyDB)
			}
		}
		out = append(out, pr)
	}
	return out
}

func (p *parser) resolveDBUsers(raw *rawSpec) {
	for _, in := range p.spec.Instances {
		for _, d := range in.DBs {
			rd := raw.Instances[in.Name].DBs[d.Name]
			path, entry := "instances."+in.Name+".dbs."+d.Name, "db "+d.ID()
			d.User = p.users[rd.User]
			switch {
			case rd.User == "":
				p.errf(path, entry, "user is missing")
			case d.User == nil:
				p.errf(path+".user", entry, "user %q is not declared", rd.User)
			case d.User.Instance != in:
				p.errf(path+".user", entry, "user %q belongs to another instance", rd.User)
			}
		}
	}
}

func (p *parser) buildKeys(raw *rawSpec) {
	p.keys = map[string]*Key{}
	for _, name := range slices.Sorted(maps.Keys(raw.Keys)) {
		r := raw.Keys[name]
		path, entry := "keys."+name, fmt.Sprintf("key %q", name)
		k := &Key{Pos: p.pos(path), Name: name, Source: p.source(path, entry, r.Seed, r.Source), Doc: r.Doc, Kind: r.Kind, Value: r.Value, Fields: r.Fields, MaxBytes: r.MaxBytes, MaxLen: r.MaxLen}
		if !identOK(name) {
			p.errf(path, entry, "name must be [a-z][a-z0-9_]*")
		}
		k.DB = p.dbs[r.DB]
		if k.DB == nil {
			p.errf(path, entry, "db %q is not declared (want instance.db, e.g. app.db0)", r.DB)
		}
		p.kind(path, entry, r.Kind)
		if len(r.Value) == 0 {
			p.errf(path, entry, "value is missing: the types the key may hold")
		}
		for _, v := range r.Value {
			if !valueTypes[v] {
				p.errf(path+".value", entry, "value type %q: want one of %s", v, keysOf(valueTypes))
			}
		}
		if r.MaxBytes < 0 {
			p.errf(path+".max_bytes", entry, "max_bytes must not be negative")
		}
		p.valueShape(path, entry, k, r)
		if !p.prefixKey(path, entry, k, r) {
			k.Pattern = p.pattern(path, entry, r.Pattern, r.Params)
			k.TTL = p.ttl(path, entry, r.TTL)
		}
		if k.DB != nil && k.DB.User != nil && k.Pattern.Parts != nil {
			p.checkOwner(path, entry, k)
		}
		p.keys[name] = k
		p.spec.Keys = append(p.spec.Keys, k)
	}
}

// valueShape checks the fields that depend on the key's value types.
func (p *parser) valueShape(path, entry string, k *Key, r rawKey) {
	hash, stream, list := k.Holds(ValueHash), k.Holds(ValueStream), k.Holds(ValueList)
	if len(r.Fields) > 0 && !hash && !stream {
		p.errf(path+".fields", entry, "fields apply to a hash (its fields) or a stream (its entries' fields)")
	}
	if r.MaxLen < 0 {
		p.errf(path+".max_len", entry, "max_len must not be negative")
	}
	if r.MaxLen > 0 && !stream && !list {
		p.errf(path+".max_len", entry, "max_len applies to a list or a stream (the most elements every write keeps)")
	}
	if r.Retention != "" {
		if !stream {
			p.errf(path+".retention", entry, "retention applies to a stream (entries older than it are trimmed with MINID)")
		}
		k.Retention = p.duration(path+".retention", entry, "retention", r.Retention, true)
	}
	if stream && len(k.Value) > 1 {
		p.errf(path+".value", entry, "a stream key holds only streams: its bound is checked on XADD")
	}
}

// checkOwner: the key's literal prefix must start with a prefix granted to the
// user of its database (a legacy prefix counts only for keys of its database).
func (p *parser) checkOwner(path, entry string, k *Key) {
	var granted []string
	for _, pr := range k.DB.User.KeyPrefixes {
		if pr.LegacyDB != nil && pr.LegacyDB != k.DB {
			continue
		}
		if pr.Covers(k.Pattern) {
			return
		}
		granted = append(granted, pr.Glob())
	}
	p.errf(path+".pattern", entry, "pattern %q is outside every prefix of its owner %s (%s)", k.Pattern.Raw, k.DB.User.Name, strings.Join(granted, ", "))
}

func (p *parser) pattern(path, entry, raw string, params map[string]rawParam) Pattern {
	if raw == "" {
		p.errf(path, entry, "pattern is missing")
		return Pattern{}
	}
	resolved := map[string]*Param{}
	for _, name := range slices.Sorted(maps.Keys(params)) {
		resolved[name] = p.param(path+".params."+name, entry, name, params[name])
	}
	pat, err := parsePattern(raw, resolved)
	if err != nil {
		p.errf(path+".pattern", entry, "pattern %q: %v", raw, err)
		return Pattern{}
	}
	return pat
}

// maxLenLimits are the max_len a name or path value (a placeholder, or an
// argument of type name) has when the spec gives none (dflt), and the most it
// may give.
var maxLenLimits = map[string]struct{ dflt, most int }{
	TypeName: {64, 256}, // ArgName too
	TypePath: {128, 512},
}

// maxLen is the max_len n the spec gives a value of type typ (name or path),
// or the type's default for 0; an error unless it is within the type's limit.
func (p *parser) maxLen(path, entry, typ string, n int) int {
	lim := maxLenLimits[typ]
	if n == 0 {
		n = lim.dflt
	}
	if n < 1 || n > lim.most {
		p.errf(path, entry, "max_len %d: want 1..%d", n, lim.most)
	}
	return n
}

// paramTypes are the placeholder types, for messages.
const paramTypes = "uuid, int, hex, name, path, enum, sha256, hmac"

func (p *parser) param(path, entry, name string, r rawParam) *Param {
	entry = fmt.Sprintf("%s placeholder {%s}", entry, name)
	prm := &Param{Pos: p.pos(path), Name: name, Type: r.Type, Doc: r.Doc, Len: r.Len, MaxLen: r.MaxLen, Encode: r.Encode}
	set := map[string]bool{"min/max": r.Min != "" || r.Max != "", "len": r.Len != 0, "max_len": r.MaxLen != 0, "enum": r.Enum != ""}
	extra := func(fields ...string) {
		for _, f := range fields {
			if set[f] {
				p.errf(path, entry, "%s does not apply to type %s", f, r.Type)
			}
		}
	}
	switch r.Type {
	case "":
		p.errf(path, entry, "type is missing: want one of %s", paramTypes)
	case TypeUUID, TypeSHA256, TypeHMAC:
		extra("min/max", "len", "max_len", "enum")
	case TypeInt:
		prm.Min = p.int64(path+".min", entry, "min", r.Min, 0)
		prm.Max = p.int64(path+".max", entry, "max", r.Max, 1<<53-1)
		if prm.Min > prm.Max {
			p.errf(path, entry, "min %d is above max %d", prm.Min, prm.Max)
		}
		extra("len", "enum")
	case TypeHex:
		if r.Len <= 0 || r.Len > 128 {
			p.errf(path, entry, "hex needs len between 1 and 128")
		}
		extra("min/max", "max_len", "enum")
	case TypeName, TypePath:
		prm.MaxLen = p.maxLen(path, entry, r.Type, prm.MaxLen)
		extra("min/max", "len", "enum")
	case TypeEnum:
		extra("min/max", "len", "max_len")
		prm.Enum = p.enums[r.Enum]
		if prm.Enum == nil {
			p.errf(path, entry, "enum %q is not declared", r.Enum)
		}
		switch r.Encode {
		case EncodeLabel:
			if prm.Enum != nil {
				for _, v := range prm.Enum.Values {
					if !literalOK(v) {
						p.errf(path, entry, "enum %s value %q cannot appear in a key: use encode: sha256", r.Enum, v)
					}
				}
			}
		case EncodeSHA256:
		default:
			p.errf(path, entry, "encode %q: want label or sha256", r.Encode)
		}
	default:
		p.errf(path+".type", entry, "unknown type %q: want one of %s", r.Type, paramTypes)
	}
	if r.Type != TypeEnum && r.Encode != "" {
		p.errf(path, entry, "encode applies only to enum")
	}
	return prm
}

const ttlRules = "fixed, window_jitter, heartbeat, clamped or none"

func (p *parser) ttl(path, entry string, r *rawTTL) TTL {
	if r == nil {
		p.errf(path, entry, "ttl is missing: declare how the key expires (%s; a key kept until a script deletes it: {rule: none, reason: ...})", ttlRules)
		return TTL{}
	}
	tp := path + ".ttl"
	t := TTL{Pos: p.pos(tp), Rule: r.Rule, From: r.From, Reason: r.Reason, Persist: strings.TrimSpace(r.Persist)}
	if r.Rule != TTLClamped && r.Persist != "" {
		p.errf(tp, entry, "ttl persist applies to rule clamped (a TTL the caller chooses, which it may also remove), not to %s", r.Rule)
	}
	given := map[string]string{"value": r.Value, "max_jitter": r.MaxJitter, "max": r.Max, "exceeds": r.Exceeds, "from": r.From, "reason": r.Reason}
	unused := func(fields ...string) {
		for _, f := range fields {
			if given[f] != "" {
				p.errf(tp, entry, "ttl %s does not apply to rule %s", f, r.Rule)
			}
		}
	}
	bounds := func() {
		if r.Max != "" {
			t.Max = p.duration(tp+".max", entry, "ttl max", r.Max, true)
		}
		if r.Exceeds != "" {
			t.Exceeds = p.duration(tp+".exceeds", entry, "ttl exceeds", r.Exceeds, true)
		}
		if t.Max > 0 && t.Exceeds >= t.Max {
			p.errf(tp, entry, "ttl exceeds %s leaves no value at or below max %s", r.Exceeds, r.Max)
		}
	}
	switch r.Rule {
	case TTLFixed, TTLHeartbeat:
		t.Value = p.duration(tp+".value", entry, "ttl value", r.Value, true)
		bounds()
		unused("max_jitter", "from", "reason")
	case TTLWindowJitter:
		t.MaxJitter = p.duration(tp+".max_jitter", entry, "ttl max_jitter", r.MaxJitter, false)
		unused("value", "max", "exceeds", "from", "reason")
	case TTLClamped:
		t.Max = p.duration(tp+".max", entry, "ttl max", r.Max, true)
		if t.From == "" {
			t.From = "the config"
		}
		unused("value", "max_jitter", "exceeds", "reason")
	case TTLNone:
		if r.Reason == "" {
			p.errf(tp, entry, "ttl none needs a reason: why the key never expires")
		}
		unused("value", "max_jitter", "max", "exceeds", "from")
	case "":
		p.errf(tp, entry, "ttl rule is missing: want %s", ttlRules)
	default:
		p.errf(tp+".rule", entry, "unknown ttl rule %q: want %s", r.Rule, ttlRules)
	}
	return t
}

func (p *parser) buildChannels(raw *rawSpec) {
	p.channels = map[string]*Channel{}
	for _, name := range slices.Sorted(maps.Keys(raw.Channels)) {
		r := raw.Channels[name]
		path, entry := "channels."+name, fmt.Sprintf("channel %q", name)
		c := &Channel{Pos: p.pos(path), Name: name, Source: p.source(path, entry, r.Seed, r.Source), MaxBytes: r.MaxBytes}
		if !identOK(name) {
			p.errf(path, entry, "name must be [a-z][a-z0-9_]*")
		}
		c.Instance = p.instances[r.Instance]
		if c.Instance == nil {
			p.errf(path, entry, "instance %q is not declared", r.Instance)
		}
		if r.MaxBytes <= 0 {
			p.errf(path, entry, "max_bytes is missing: every payload is size-limited")
		}
		if r.Server != "" && c.Instance != nil {
			if c.Server = c.Instance.ServerNamed(r.Server); c.Server == nil {
				p.errf(path+".server", entry, "server %q is not declared under %s's servers", r.Server, c.Instance.Name)
			}
		}
		c.Pattern = p.pattern(path, entry, r.Pattern, r.Params)
		if c.Pattern.HasTag() {
			p.errf(path+".pattern", entry, "pattern %q: a hash tag places a key in a slot; a channel has none", c.Pattern.Raw)
		}
		if c.Instance != nil && c.Pattern.Parts != nil {
			covered := false
			for _, u := range p.spec.Users {
				if u.Instance != c.Instance {
					continue
				}
				for _, pr := range u.ChannelPrefixes {
					if pr.Covers(c.Pattern) {
						covered = true
					}
				}
			}
			if !covered {
				p.errf(path+".pattern", entry, "pattern %q is outside every channel prefix of %s's users", c.Pattern.Raw, c.Instance.Name)
			}
		}
		p.channels[name] = c
		if c.Instance != nil {
			c.Instance.Channels = append(c.Instance.Channels, c)
		}
		p.spec.Channels = append(p.spec.Channels, c)
	}
}

func (p *parser) buildScripts(raw *rawSpec) {
	names := map[string]string{} // instance/name -> ID
	for _, id := range slices.Sorted(maps.Keys(raw.Scripts)) {
		r := raw.Scripts[id]
		path, entry := "scripts."+id, fmt.Sprintf("script %q", id)
		inst, name, dotted := strings.Cut(id, ".")
		if !dotted {
			inst, name = r.Instance, id
		}
		s := &Script{Pos: p.pos(path), ID: id, Name: name, Source: p.source(path, entry, r.Seed, r.Source), Doc: r.Doc, Kind: r.Kind, ReadOnly: r.ReadOnly, CrossSlot: r.CrossSlot, ReplaySafe: strings.TrimSpace(r.ReplaySafe)}
		if r.ReadOnly && s.ReplaySafe != "" {
			p.errf(path+".replay_safe", entry, "replay_safe on a read_only script: a script that writes nothing is safe to replay already; drop replay_safe")
		}
		if !identOK(name) {
			p.errf(path, entry, "name must be [a-z][a-z0-9_]* (it is also the file name), or instance.name")
		}
		switch {
		case dotted && r.Instance != "" && r.Instance != inst:
			p.errf(path+".instance", entry, "instance %q, but the entry's name says %s (instance.name): drop instance, or rename the entry", r.Instance, inst)
		case r.Instance == "" && !dotted:
			p.errf(path, entry, "instance is missing: name the instance it runs on (instance: ...), or write the entry as instance.name")
		}
		s.Instance = p.instances[inst]
		if s.Instance == nil && inst != "" {
			p.errf(path, entry, "instance %q is not declared", inst)
		}
		if other, dup := names[inst+"/"+name]; dup {
			p.errf(path, entry, "instance %s has script %q twice (also entry %q)", inst, name, other)
		}
		names[inst+"/"+name] = id
		p.kind(path, entry, r.Kind)
		p.scriptKeys(path, entry, s, r.Keys)
		p.sharedPlaceholders(path, entry, s, r.SharedPlaceholders, p.rawArgKeys(r.Argv))
		p.scriptArgv(path, entry, s, r.Argv)
		p.scriptReply(path, entry, s, r.Reply)
		p.scriptChannels(path, entry, s)
		p.scriptDerived(path, entry, s, r.Derived)
		codes := map[string]bool{}
		for i, re := range r.Errors {
			ep := fmt.Sprintf("%s.errors[%d]", path, i)
			if !codeRe.MatchString(re.Code) {
				p.errf(ep, entry, "error code %q: want the reply's first word, [A-Za-z][A-Za-z0-9_]* (NOT_OWNER; the first word of a free-text reply, task for \"task id not found\")", re.Code)
			}
			if codes[re.Code] {
				p.errf(ep, entry, "error code %s declared twice", re.Code)
			}
			codes[re.Code] = true
			if s.Instance != nil {
				if p.errorCodes == nil {
					p.errorCodes = map[*Instance]map[string]string{}
				}
				if p.errorCodes[s.Instance] == nil {
					p.errorCodes[s.Instance] = map[string]string{}
				}
				low := strings.ToLower(re.Code)
				if other, ok := p.errorCodes[s.Instance][low]; ok && other != re.Code {
					p.errf(ep, entry, "error code %s and %s (another script of instance %s) differ only in case: both would be one Go error; spell them alike", re.Code, other, s.Instance.Name)
				}
				p.errorCodes[s.Instance][low] = re.Code
			}
			s.Errors = append(s.Errors, &ScriptError{Pos: p.pos(ep), Code: re.Code, Doc: re.Doc})
		}
		p.spec.Scripts = append(p.spec.Scripts, s)
	}
}

func (p *parser) scriptKeys(path, entry string, s *Script, raw []rawScriptKey) {
	names := map[string]bool{}
	for i, rk := range raw {
		kp := fmt.Sprintf("%s.keys[%d]", path, i)
		kentry := fmt.Sprintf("%s KEYS[%d] %q", entry, i+1, rk.Name)
		sk := &ScriptKey{Pos: p.pos(kp), Name: rk.Name, Doc: rk.Doc}
		if !identOK(rk.Name) {
			p.errf(kp, kentry, "name must be [a-z][a-z0-9_]*")
		}
		if names[rk.Name] {
			p.errf(kp, kentry, "name used twice")
		}
		names[rk.Name] = true
		floor := 1 // a script's only KEYS position repeats at least once: a call passes a key
		if i > 0 {
			floor = 0
		}
		sk.Repeat = p.repeat(kp, kentry, rk.Repeat, i == len(raw)-1, floor)
		if rk.Unused != nil {
			sk.Unused = strings.TrimSpace(rk.Unused.Reason)
			if sk.Unused == "" {
				p.errf(kp+".unused", kentry, "unused needs a reason: why callers pass a key the script never reads")
			}
			if sk.Repeat != nil {
				p.errf(kp, kentry, "unused and repeat: a repeating position is one the script reads")
			}
		}
		if rk.Creates != nil {
			sk.NeverCreates = !*rk.Creates
			if *rk.Creates {
				p.errf(kp+".creates", kentry, "creates: true is what every position is; only creates: false (the script never creates the key) says something")
			}
		}
		if rk.Channel != "" {
			if len(rk.OneOf) > 0 {
				p.errf(kp, kentry, "one_of and channel: a position passes a key or a channel's name, not both")
			}
			sk.Channel = p.channelOf(kp, kentry, s, rk.Channel)
			s.Keys = append(s.Keys, sk)
			continue
		}
		if len(rk.OneOf) == 0 {
			p.errf(kp, kentry, "one_of is empty: name the declared keys this position takes (or channel: the channel whose name it passes)")
		}
		for _, kn := range rk.OneOf {
			k := p.keys[kn]
			if k == nil {
				p.errf(kp, kentry, "key %q is not declared", kn)
				continue
			}
			if s.Instance != nil && k.DB != nil && k.DB.Instance != s.Instance {
				p.errf(kp, kentry, "key %q lives on instance %s, the script on %s", kn, k.DB.Instance.Name, s.Instance.Name)
				continue
			}
			if k.DB != nil {
				if s.DB == nil {
					s.DB = k.DB
				} else if s.DB != k.DB {
					p.errf(kp, kentry, "key %q lives in %s, another key of the script in %s: a script runs in one database", kn, k.DB.ID(), s.DB.ID())
				}
			}
			sk.OneOf = append(sk.OneOf, k)
		}
		s.Keys = append(s.Keys, sk)
	}
}

// repeat resolves a KEYS or ARGV position's repeat: only the last position
// may repeat, Min..Max values with min at least floor (1 for a script's only
// KEYS position: a call passes at least one key; 0 otherwise: the caller may
// pass none of a trailing position).
func (p *parser) repeat(path, entry string, r *rawRepeat, last bool, floor int) *Repeat {
	if r == nil {
		return nil
	}
	rp := path + ".repeat"
	out := &Repeat{Pos: p.pos(rp), Min: 1, Max: r.Max}
	if r.Min != nil {
		out.Min = *r.Min
	}
	if !last {
		p.errf(rp, entry, "repeat on a position that is not the last: only the trailing position may repeat (the script reads the ones after it at fixed indexes)")
	}
	switch {
	case out.Min < floor:
		p.errf(rp, entry, "repeat min %d: want at least %d", out.Min, floor)
	case r.Max == 0:
		p.errf(rp, entry, "repeat max is missing: the most values a call passes (at most %d, what Lua's unpack returns)", MaxRepeat)
	case out.Max > MaxRepeat:
		p.errf(rp, entry, "repeat max %d: at most %d, what Lua's unpack returns", out.Max, MaxRepeat)
	case out.Min > out.Max:
		p.errf(rp, entry, "repeat min %d is above max %d", out.Min, out.Max)
	}
	return out
}

// channelOf resolves the channel a KEYS or ARGV position carries: one of the
// script's instance, which the script's user may publish to.
func (p *parser) channelOf(path, entry string, s *Script, name string) *Channel {
	c := p.channels[name]
	switch {
	case c == nil:
		p.errf(path, entry, "channel %q is not declared", name)
	case s.Instance != nil && c.Instance != s.Instance:
		p.errf(path, entry, "channel %q is of instance %s, the script on %s", name, c.Instance.Name, s.Instance.Name)
	}
	return c
}

// sharedPlaceholders resolves the placeholders a script's KEYS positions share,
// and on a cluster instance proves its KEYS land in one slot.
func (p *parser) sharedPlaceholders(path, entry string, s *Script, names []string, argKeys []*Key) {
	sp := path + ".shared_placeholders"
	seen := map[string]bool{}
	for _, name := range names {
		if seen[name] {
			p.errf(sp, entry, "shared placeholder {%s} listed twice", name)
			continue
		}
		seen[name] = true
		var first *Param
		var firstKey *Key
		positions := 0
		for i, pos := range s.Keys {
			has, lacks := "", ""
			for _, k := range pos.OneOf {
				prm := k.Pattern.Param(name)
				if prm == nil {
					lacks = k.Name
					continue
				}
				has = k.Name
				if first == nil {
					first, firstKey = prm, k
				} else if prm.Type != first.Type || prm.Encode != first.Encode || prm.Enum != first.Enum {
					p.errf(sp, entry, "shared placeholder {%s} is a %s in key %q and a %s in key %q: a shared value needs one type", name, describeParam(first), firstKey.Name, describeParam(prm), k.Name)
				}
			}
			switch {
			case has != "" && lacks != "":
				p.errf(sp, entry, "shared placeholder {%s}: KEYS[%d] %q takes key %q, which has it, and key %q, which does not; a position's keys all have it or none does", name, i+1, pos.Name, has, lacks)
			case has != "":
				positions += min(pos.Count().Max, 2) // a repeating position ties its own elements
			}
		}
		for _, k := range argKeys { // ARGV of type key (derived.go): the wrapper compares them too
			if prm := k.Pattern.Param(name); prm != nil {
				if first != nil && (prm.Type != first.Type || prm.Encode != first.Encode || prm.Enum != first.Enum) {
					p.errf(sp, entry, "shared placeholder {%s} is a %s in key %q and a %s in key %q: a shared value needs one type", name, describeParam(first), firstKey.Name, describeParam(prm), k.Name)
				}
				positions++
			}
		}
		if positions < 2 {
			p.errf(sp, entry, "shared placeholder {%s} is in %d KEYS position(s): sharing ties two or more (or the elements of a repeating one)", name, positions)
		}
	}
	s.SharedPlaceholders = names
	if s.Instance != nil && s.Instance.Topology == TopologyCluster && s.MaxKeys() > 1 && !s.SameSlot() {
		p.errf(path, entry, "on cluster instance %s its %d KEYS can land in different hash slots (CROSSSLOT): give every key it takes one hash tag, a fixed one (\"\\{app\\}:...\") or one placeholder's (\"{{id}}\") tied with shared_placeholders: [id]%s",
			s.Instance.Name, s.MaxKeys(), untagged(s))
	}
}

// untagged names the first key of a script without a hash tag, for the cluster error.
func untagged(s *Script) string {
	for _, pos := range s.Keys {
		if pos.Channel != nil {
			return fmt.Sprintf(" (KEYS %q is channel %q, whose name has no hash tag)", pos.Name, pos.Channel.Name)
		}
		for _, k := range pos.OneOf {
			if !k.Pattern.HasTag() {
				return fmt.Sprintf(" (key %q has no hash tag)", k.Name)
			}
		}
	}
	return ""
}

func describeParam(p *Param) string {
	if p.Type == TypeEnum && p.Enum != nil {
		return fmt.Sprintf("enum %s (%s)", p.Enum.Name, p.Encode)
	}
	return p.Type
}

// scriptChannels resolves the database of a script whose KEYS are all
// channels (its instance's only live one) and checks that its user may use
// each channel it carries: publish to it (a channel prefix), and, for a
// channel passed in KEYS, name it as a key (EVALSHA checks every KEYS
// element against the user's key patterns).
func (p *parser) scriptChannels(path, entry string, s *Script) {
	var used []*Channel
	inKeys := map[*Channel]bool{}
	for _, k := range s.Keys {
		if k.Channel != nil {
			used = append(used, k.Channel)
			inKeys[k.Channel] = true
		}
	}
	for _, a := range s.Argv {
		if a.Channel != nil {
			used = append(used, a.Channel)
		}
	}
	if len(s.Keys) == 0 && len(used) == 0 {
		p.errf(path, entry, "keys is empty: a script touches only the keys passed in KEYS (one that only publishes takes its channels in KEYS or ARGV)")
	}
	if len(used) == 0 || s.Instance == nil {
		return
	}
	if s.DB == nil {
		dbs := s.Instance.LiveDBs()
		if len(dbs) != 1 {
			p.errf(path, entry, "no KEYS position passes a key, and instance %s has %d live databases: pass one of its keys too, so that the script has a database", s.Instance.Name, len(dbs))
			return
		}
		s.DB = dbs[0]
	}
	u := s.DB.User
	if u == nil {
		return
	}
	for _, c := range used {
		if c == nil || c.Instance != s.Instance || c.Pattern.Parts == nil {
			continue // undeclared, or another instance's: reported where it is named
		}
		covered := false
		for _, pr := range u.ChannelPrefixes {
			covered = covered || pr.Covers(c.Pattern)
		}
		if !covered {
			p.errf(path, entry, "publishes to channel %q (%s), outside every channel prefix of its user %s: grant the user a channel prefix covering it", c.Name, c.Pattern.Raw, u.Name)
		}
		if !inKeys[c] {
			continue
		}
		covered = false
		for _, pr := range u.LivePrefixes() {
			covered = covered || pr.Covers(c.Pattern)
		}
		if !covered {
			p.errf(path, entry, "passes channel %q (%s) in KEYS, and EVALSHA checks every KEYS element against the key patterns of user %s, none of which covers it: grant a key prefix covering it, or pass the channel in ARGV", c.Name, c.Pattern.Raw, u.Name)
		}
	}
}

var argTypes = "int, int64, bool, string, bytes, duration_ms, token, hex, uuid, name, key, enum"

// specialArg resolves an argument that is unused (the wrapper sends "") or
// carries a declared channel's name: it has no type of its own.
func (p *parser) specialArg(ap, aentry string, s *Script, a *Arg, ra rawArg) {
	if ra.Type != "" || ra.Min != "" || ra.Max != "" || ra.MaxBytes != 0 || ra.Len != 0 || ra.MaxLen != 0 || ra.TTLOf != "" || ra.MaxLenOf != "" || ra.Optional {
		p.errf(ap, aentry, "an unused or channel argument has no type or bounds of its own: drop type, min, max, max_bytes, len, max_len, ttl_of, max_len_of, optional")
	}
	if ra.Unused != nil {
		a.Type, a.Unused = ArgUnused, strings.TrimSpace(ra.Unused.Reason)
		if a.Unused == "" {
			p.errf(ap+".unused", aentry, "unused needs a reason: why callers pass an argument the script never reads")
		}
		if ra.Channel != "" {
			p.errf(ap, aentry, "unused and channel: an argument the script never reads carries no channel")
		}
		return
	}
	a.Type = ArgChannel
	a.Channel = p.channelOf(ap, aentry, s, ra.Channel)
}

// maxLenOf resolves max_len_of: a list or stream key of the script's instance
// with a declared max_len.
func (p *parser) maxLenOf(ap, aentry string, s *Script, name string) *Key {
	k := p.keys[name]
	switch {
	case k == nil:
		p.errf(ap, aentry, "max_len_of key %q is not declared", name)
	case k.MaxLen == 0:
		p.errfFollows(k, ap, aentry, "max_len_of key %q declares no max_len", name)
	case s.Instance != nil && k.DB != nil && k.DB.Instance != s.Instance:
		p.errf(ap, aentry, "max_len_of key %q lives on instance %s, the script on %s", name, k.DB.Instance.Name, s.Instance.Name)
	default:
		return k
	}
	return nil
}

func (p *parser) scriptArgv(path, entry string, s *Script, raw []rawArg) {
	names := map[string]bool{}
	for i, ra := range raw {
		ap := fmt.Sprintf("%s.argv[%d]", path, i)
		aentry := fmt.Sprintf("%s ARGV[%d] %q", entry, i+1, ra.Name)
		a := &Arg{Pos: p.pos(ap), Name: ra.Name, Type: ra.Type, Doc: ra.Doc, MaxBytes: ra.MaxBytes, Len: ra.Len, MaxLen: ra.MaxLen, Optional: ra.Optional}
		if ra.Optional && ra.TTLOf != "" {
			p.errf(ap, aentry, "optional does not apply with ttl_of: the wrapper always sends the key's TTL")
		}
		if !identOK(ra.Name) {
			p.errf(ap, aentry, "name must be [a-z][a-z0-9_]*")
		}
		if names[ra.Name] {
			p.errf(ap, aentry, "name used twice")
		}
		names[ra.Name] = true
		a.Repeat = p.repeat(ap, aentry, ra.Repeat, i == len(raw)-1, 0)
		if a.Repeat != nil && (ra.Optional || ra.TTLOf != "" || ra.MaxLenOf != "" || ra.Unused != nil) {
			p.errf(ap, aentry, "repeat does not combine with optional, ttl_of, max_len_of or unused (repeat min 0 lets the caller leave it out)")
		}
		if ra.Unused != nil || ra.Channel != "" {
			p.specialArg(ap, aentry, s, a, ra)
			s.Argv = append(s.Argv, a)
			continue
		}
		bad := func(cond bool, field string) {
			if cond {
				p.errf(ap, aentry, "%s does not apply to type %s", field, ra.Type)
			}
		}
		if ra.MaxLenOf != "" && ra.Type != ArgInt {
			p.errf(ap, aentry, "max_len_of applies to type int (the wrapper sends the key's max_len)")
		}
		switch ra.Type {
		case ArgInt:
			if ra.MaxLenOf != "" {
				a.MaxLenOf = p.maxLenOf(ap, aentry, s, ra.MaxLenOf)
				bad(ra.Min != "" || ra.Max != "" || ra.Optional, "min/max/optional (the value is the key's max_len)")
				if a.MaxLenOf != nil {
					a.Min, a.Max = int64(a.MaxLenOf.MaxLen), int64(a.MaxLenOf.MaxLen)
				}
			} else {
				a.Min = p.int64(ap+".min", aentry, "min", ra.Min, -(1<<53 - 1))
				a.Max = p.int64(ap+".max", aentry, "max", ra.Max, 1<<53-1)
			}
			if a.Min > a.Max {
				p.errf(ap, aentry, "min %d is above max %d", a.Min, a.Max)
			}
			bad(ra.MaxBytes != 0 || ra.Len != 0 || ra.MaxLen != 0 || ra.TTLOf != "", "max_bytes/len/max_len/ttl_of")
		case ArgInt64:
			a.Min = p.exactInt64(ap+".min", aentry, "min", ra.Min, math.MinInt64)
			a.Max = p.exactInt64(ap+".max", aentry, "max", ra.Max, math.MaxInt64)
			if a.Min > a.Max {
				p.errf(ap, aentry, "min %d is above max %d", a.Min, a.Max)
			}
			bad(ra.MaxBytes != 0 || ra.Len != 0 || ra.MaxLen != 0 || ra.TTLOf != "", "max_bytes/len/max_len/ttl_of")
		case ArgDurationMS:
			if ra.TTLOf != "" {
				a.TTLOf = p.keys[ra.TTLOf]
				switch {
				case a.TTLOf == nil:
					p.errf(ap, aentry, "ttl_of key %q is not declared", ra.TTLOf)
				case a.TTLOf.TTL.Rule != TTLFixed && a.TTLOf.TTL.Rule != TTLHeartbeat:
					p.errfFollows(a.TTLOf, ap, aentry, "ttl_of key %q has a %s TTL; only fixed and heartbeat TTLs are constants", ra.TTLOf, a.TTLOf.TTL.Rule)
				case s.Instance != nil && a.TTLOf.DB != nil && a.TTLOf.DB.Instance != s.Instance:
					p.errf(ap, aentry, "ttl_of key %q lives on instance %s, the script on %s", ra.TTLOf, a.TTLOf.DB.Instance.Name, s.Instance.Name)
				case a.TTLOf.DB != nil && !a.TTLOf.Live() && s.Live():
					p.errf(ap, aentry, "ttl_of key %q lives in cut-over %s: its TTL is not generated", ra.TTLOf, a.TTLOf.DB.ID())
				}
				bad(ra.Min != "" || ra.Max != "", "min/max (the TTL is the key's)")
			} else {
				a.MinDur = p.duration(ap+".min", aentry, "min", orDefault(ra.Min, "0s"), false)
				a.MaxDur = p.duration(ap+".max", aentry, "max", ra.Max, true)
				if a.MinDur > a.MaxDur {
					p.errf(ap, aentry, "min %s is above max %s", a.MinDur, a.MaxDur)
				}
			}
			bad(ra.MaxBytes != 0 || ra.Len != 0 || ra.MaxLen != 0, "max_bytes/len/max_len")
		case ArgString, ArgBytes:
			if a.MaxBytes <= 0 {
				p.errf(ap, aentry, "max_bytes is missing: every value crossing Redis is size-limited")
			}
			bad(ra.Min != "" || ra.Max != "" || ra.Len != 0 || ra.MaxLen != 0 || ra.TTLOf != "", "min/max/len/max_len/ttl_of")
		case ArgHex:
			if a.Len <= 0 || a.Len > 128 {
				p.errf(ap, aentry, "hex needs len between 1 and 128")
			}
			bad(ra.Min != "" || ra.Max != "" || ra.MaxBytes != 0 || ra.MaxLen != 0 || ra.TTLOf != "", "min/max/max_bytes/max_len/ttl_of")
		case ArgName:
			a.MaxLen = p.maxLen(ap, aentry, ArgName, a.MaxLen)
			bad(ra.Min != "" || ra.Max != "" || ra.MaxBytes != 0 || ra.Len != 0 || ra.TTLOf != "", "min/max/max_bytes/len/ttl_of")
		case ArgBool, ArgToken, ArgUUID:
			bad(ra.Min != "" || ra.Max != "" || ra.MaxBytes != 0 || ra.Len != 0 || ra.MaxLen != 0 || ra.TTLOf != "", "min/max/max_bytes/len/max_len/ttl_of")
		case ArgKey:
			bad(ra.Min != "" || ra.Max != "" || ra.MaxBytes != 0 || ra.Len != 0 || ra.MaxLen != 0 || ra.TTLOf != "", "min/max/max_bytes/len/max_len/ttl_of")
			p.argKey(ap, aentry, s, a, ra)
		case ArgEnum:
			bad(ra.Min != "" || ra.Max != "" || ra.MaxBytes != 0 || ra.Len != 0 || ra.MaxLen != 0 || ra.TTLOf != "" || ra.Optional, "min/max/max_bytes/len/max_len/ttl_of/optional")
			if a.Enum = p.enums[ra.Enum]; a.Enum == nil {
				p.errf(ap, aentry, "enum %q is not declared (type enum names one: enum: <name>)", ra.Enum)
			}
		case "":
			p.errf(ap, aentry, "type is missing: want one of %s", argTypes)
		default:
			p.errf(ap+".type", aentry, "ARGV type %q does not exist: want one of %s", ra.Type, argTypes)
		}
		if ra.Key != "" && ra.Type != ArgKey {
			p.errf(ap, aentry, "key applies to type key (a key's name passed in ARGV)")
		}
		if ra.Enum != "" && ra.Type != ArgEnum {
			p.errf(ap, aentry, "enum applies to type enum (one value of a declared enum)")
		}
		s.Argv = append(s.Argv, a)
	}
}

var replyTypes = "int, bool, string, bytes, duration_ms, time_ms, enum, strings, list"

// maxReplyDepth bounds how deep list fields nest.
const maxReplyDepth = 4

// replyField resolves one reply field; a list field's element fields recursively.
func (p *parser) replyField(fp, entry string, r rawField, inArray bool, depth int) *Field {
	f := &Field{Pos: p.pos(fp), Name: r.Name, Type: r.Type, Doc: r.Doc, Nullable: r.Nullable, TypeName: r.TypeName, Of: r.Of}
	fentry := fmt.Sprintf("%s reply %q", entry, r.Name)
	if !identOK(r.Name) {
		p.errf(fp, fentry, "name must be [a-z][a-z0-9_]*")
	}
	switch r.Type {
	case ReplyInt, ReplyBool, ReplyString, ReplyBytes, ReplyDurationMS, ReplyTimeMS:
	case ReplyStrings:
		if inArray {
			p.errf(fp, fentry, "strings is a whole reply, not a field of one (a field holding a list of strings: type list, of: string)")
		}
	case ReplyList:
		if r.Of != "" {
			p.listOf(fp, fentry, r, f)
			break
		}
		if len(r.Fields) == 0 {
			p.errf(fp, fentry, "a list needs fields (each element an array of them) or of (each element one value of that type)")
		}
		if depth >= maxReplyDepth {
			p.errf(fp, fentry, "lists nest at most %d deep", maxReplyDepth)
			break
		}
		names := map[string]bool{}
		for i, rf := range r.Fields {
			efp := fmt.Sprintf("%s.fields[%d]", fp, i)
			if names[rf.Name] {
				p.errf(efp, fentry, "element field %q declared twice", rf.Name)
			}
			names[rf.Name] = true
			f.Fields = append(f.Fields, p.replyField(efp, fmt.Sprintf("%s reply %q element", entry, r.Name), rf, true, depth+1))
		}
	case ReplyEnum:
		f.Enum = p.enums[r.Enum]
		if f.Enum == nil {
			p.errf(fp, fentry, "enum %q is not declared", r.Enum)
		}
	case "":
		p.errf(fp, fentry, "type is missing: want one of %s", replyTypes)
	default:
		p.errf(fp+".type", fentry, "reply type %q does not exist: want one of %s", r.Type, replyTypes)
	}
	if r.Type != ReplyEnum && r.Enum != "" && !(r.Type == ReplyList && r.Of == ReplyEnum) {
		p.errf(fp, fentry, "enum applies only to type enum (or a list of: enum)")
	}
	if r.Type != ReplyList && (len(r.Fields) > 0 || r.TypeName != "") {
		p.errf(fp, fentry, "fields and type_name apply only to type list")
	}
	if r.Type != ReplyList && r.Of != "" {
		p.errf(fp+".of", fentry, "of applies only to type list (a list whose elements are each one value)")
	}
	if r.TypeName != "" && !identOK(r.TypeName) {
		p.errf(fp, fentry, "type_name %q: want [a-z][a-z0-9_]*", r.TypeName)
	}
	return f
}

// listOfTypes are the element types of a list declared with of.
var listOfTypes = "int, bool, string, bytes, duration_ms, time_ms, enum, strings"

// listOf resolves a list field whose elements are each one value of type r.Of.
func (p *parser) listOf(fp, fentry string, r rawField, f *Field) {
	if len(r.Fields) > 0 {
		p.errf(fp+".of", fentry, "a list has of (each element one value) or fields (each element an array of them), not both")
		return
	}
	if r.TypeName != "" {
		p.errf(fp+".type_name", fentry, "type_name names a list element of fields; the elements of a list with of are %s values", r.Of)
	}
	switch r.Of {
	case ReplyInt, ReplyBool, ReplyString, ReplyBytes, ReplyDurationMS, ReplyTimeMS, ReplyStrings:
	case ReplyEnum:
		f.Enum = p.enums[r.Enum]
		switch {
		case r.Enum == "":
			p.errf(fp, fentry, "a list of: enum names its enum (enum: <name>)")
		case f.Enum == nil:
			p.errf(fp, fentry, "enum %q is not declared", r.Enum)
		}
	case ReplyList:
		p.errf(fp+".of", fentry, "of: list: a list of lists nests no deeper than of: strings; for elements that are arrays of other values, declare fields")
	default:
		p.errf(fp+".of", fentry, "list element type %q does not exist: want one of %s", r.Of, listOfTypes)
	}
}

func (p *parser) scriptReply(path, entry string, s *Script, r *rawReply) {
	rp := path + ".reply"
	if r == nil {
		p.errf(path, entry, "reply is missing: declare its fields, or its type and name")
		return
	}
	if r.ByArg != "" || len(r.Shapes) > 0 {
		p.replyByArg(rp, entry, s, r)
		return
	}
	s.Reply = p.reply(rp, entry, r)
}

// replyByArg resolves a reply whose shape an argument chooses: by_arg names a
// name or string argument, shapes maps each value the wrapper may send to the
// reply the script gives for it.
func (p *parser) replyByArg(rp, entry string, s *Script, r *rawReply) {
	s.Reply.Pos = p.pos(rp)
	if r.TypeName != "" || len(r.Fields) > 0 || r.Type != "" || r.Name != "" || r.Enum != "" || r.Nullable || r.Doc != "" || r.Of != "" {
		p.errf(rp, entry, "a reply with by_arg has only shapes: each shape declares its own type, name and fields")
	}
	switch {
	case r.ByArg == "":
		p.errf(rp, entry, "shapes need by_arg: the argument whose value chooses the shape")
		return
	case len(r.Shapes) < 2:
		p.errf(rp, entry, "by_arg needs two or more shapes (one shape is a plain reply)")
	}
	for _, a := range s.Argv {
		if a.Name == r.ByArg {
			s.Reply.ByArg = a
		}
	}
	a := s.Reply.ByArg
	switch {
	case a == nil:
		p.errf(rp+".by_arg", entry, "by_arg %q is not an ARGV of the script", r.ByArg)
		return
	case a.Type != ArgName && a.Type != ArgString || a.Optional || a.Repeat != nil:
		p.errf(rp+".by_arg", entry, "by_arg %q is a %s argument: the argument that chooses the shape is a name or string, neither optional nor repeating", r.ByArg, a.Type)
		return
	}
	for _, v := range slices.Sorted(maps.Keys(r.Shapes)) {
		sp := rp + ".shapes." + v
		ok := a.Type == ArgName && keypart.Name(v, a.MaxLen) || a.Type == ArgString && len(v) <= a.MaxBytes
		if !identOK(v) || !ok {
			p.errf(sp, entry, "shape %q: a shape is named by the value the wrapper sends, [a-z][a-z0-9_]* and a valid %s of ARGV %q", v, a.Type, a.Name)
		}
		sub := r.Shapes[v]
		if sub.ByArg != "" || len(sub.Shapes) > 0 {
			p.errf(sp, entry, "shape %q: shapes do not nest", v)
			continue
		}
		s.Reply.Shapes = append(s.Reply.Shapes, &ReplyShape{Pos: p.pos(sp), Value: v, Reply: p.reply(sp, fmt.Sprintf("%s shape %q", entry, v), &sub)})
	}
}

// reply resolves one reply shape at path rp.
func (p *parser) reply(rp, entry string, r *rawReply) Reply {
	out := Reply{Pos: p.pos(rp)}
	p.replyInto(rp, entry, r, &out)
	return out
}

func (p *parser) replyInto(rp, entry string, r *rawReply, reply *Reply) {
	switch {
	case r.Type == ReplyList:
		// One value: a list of elements, each an array of the fields.
		reply.Value = p.replyField(rp, entry, rawField{Name: r.Name, Type: r.Type, Doc: r.Doc, Enum: r.Enum, Nullable: r.Nullable, TypeName: r.TypeName, Fields: r.Fields, Of: r.Of}, false, 0)
	case len(r.Fields) > 0 && (r.Type != "" || r.Name != ""):
		p.errf(rp, entry, "reply has both fields and type/name: choose an array of fields, one value, or type list with fields")
	case len(r.Fields) > 0:
		reply.TypeName = r.TypeName
		if r.Of != "" {
			p.errf(rp+".of", entry, "of applies only to type list (a list whose elements are each one value)")
		}
		if r.TypeName != "" && !identOK(r.TypeName) {
			p.errf(rp, entry, "type_name %q: want [a-z][a-z0-9_]*", r.TypeName)
		}
		if r.Nullable {
			p.errf(rp, entry, "nullable applies to a field or a one-value reply, not to an array of fields")
		}
		names := map[string]bool{}
		for i, rf := range r.Fields {
			fp := fmt.Sprintf("%s.fields[%d]", rp, i)
			if names[rf.Name] {
				p.errf(fp, entry, "reply field %q declared twice", rf.Name)
			}
			names[rf.Name] = true
			reply.Fields = append(reply.Fields, p.replyField(fp, entry, rf, true, 0))
		}
	case r.Type != "" || r.Name != "":
		if r.TypeName != "" {
			p.errf(rp, entry, "type_name names an array reply's type; a one-value reply has none")
		}
		reply.Value = p.replyField(rp, entry, rawField{Name: r.Name, Type: r.Type, Doc: r.Doc, Enum: r.Enum, Nullable: r.Nullable, Of: r.Of}, false, 0)
	default:
		p.errf(rp, entry, "reply is empty: declare its fields, or its type and name")
	}
}

// checkOverlaps rejects two keys of one instance that some concrete key matches.
func (p *parser) checkOverlaps() {
	ks := p.spec.Keys
	for i := 0; i < len(ks); i++ {
		for j := i + 1; j < len(ks); j++ {
			a, b := ks[i], ks[j]
			if a.DB == nil || b.DB == nil || a.DB.Instance != b.DB.Instance || a.Pattern.Parts == nil || b.Pattern.Parts == nil {
				continue
			}
			first, second := a, b
			if second.Line < first.Line {
				first, second = second, first
			}
			entry := fmt.Sprintf("key %q", second.Name)
			if a.Pattern.Raw == b.Pattern.Raw {
				p.errs = append(p.errs, &Error{Pos: second.Pos, Entry: entry, Msg: fmt.Sprintf("duplicate pattern %q: also key %q (line %d)", second.Pattern.Raw, first.Name, first.Line)})
				continue
			}
			switch w, certain := overlapWitness(a.Pattern, b.Pattern); {
			case w != "" && certain:
				p.errs = append(p.errs, &Error{Pos: second.Pos, Entry: entry, Msg: fmt.Sprintf("pattern %q overlaps key %q (line %d): both match %q", second.Pattern.Raw, first.Name, first.Line, w)})
			case w != "":
				p.errs = append(p.errs, &Error{Pos: second.Pos, Entry: entry, Msg: fmt.Sprintf("pattern %q may overlap key %q (line %d): luagen cannot rule out a name of both (their shapes share %q, short of an int's bounds); make their literal text differ", second.Pattern.Raw, first.Name, first.Line, w)})
			}
		}
	}
}

// duration parses a Go duration, or a whole number of days such as "30d".
func (p *parser) duration(path, entry, field, s string, positive bool) time.Duration {
	if s == "" {
		p.errf(path, entry, "%s is missing", field)
		return 0
	}
	d, err := ParseDuration(s)
	if err != nil {
		p.errf(path, entry, "%s: %v", field, err)
		return 0
	}
	if d < 0 || positive && d == 0 {
		p.errf(path, entry, "%s %s must be positive", field, s)
	}
	return d
}

// maxExact is the largest integer a Lua number (a double) holds exactly.
const maxExact = 1<<53 - 1

func (p *parser) int64(path, entry, field, s string, def int64) int64 {
	if s == "" {
		return def
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		p.errf(path, entry, "%s %q is not an integer", field, s)
	} else if n > maxExact || n < -maxExact {
		p.errf(path, entry, "%s %d: Lua numbers hold integers exactly only within ±(2^53-1)", field, n)
	}
	return n
}

// exactInt64 parses an int64 bound: any 64-bit integer.
func (p *parser) exactInt64(path, entry, field, s string, def int64) int64 {
	if s == "" {
		return def
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		p.errf(path, entry, "%s %q is not a 64-bit integer", field, s)
	}
	return n
}

// ParseDuration parses a Go duration ("30s", "24h") or whole days ("30d").
func ParseDuration(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil {
			return 0, fmt.Errorf("duration %q: want a Go duration (30s, 24h) or whole days (30d)", s)
		}
		if day := int64(24 * time.Hour); int64(n) > math.MaxInt64/day || int64(n) < math.MinInt64/day {
			return 0, fmt.Errorf("duration %q: more days than a duration holds (at most %d)", s, math.MaxInt64/day)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("duration %q: want a Go duration (30s, 24h) or whole days (30d)", s)
	}
	return d, nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func set(vals ...string) map[string]bool {
	m := map[string]bool{}
	for _, v := range vals {
		m[v] = true
	}
	return m
}

func keysOf(m map[string]bool) string { return strings.Join(slices.Sorted(maps.Keys(m)), ", ") }
