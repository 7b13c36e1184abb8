package keyspec

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hanchat/luagen/gen/rediscmd"
)

// Load reads and parses a spec file.
func Load(path string) (*Spec, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("keyspec: %w", err)
	}
	return Parse(filepath.Base(path), src)
}

// Parse parses and validates a spec. file is the name errors use ("keyspec.yaml").
// The error, when not nil, is a List of every problem found; it matches ErrInvalid.
func Parse(file string, src []byte) (*Spec, error) {
	raw, ln, err := decodeRaw(file, src)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(src)
	p := &parser{file: file, ln: ln, spec: &Spec{Pos: Pos{File: file, Line: 1}, SHA256: hex.EncodeToString(sum[:]), Version: raw.Version}}
	p.build(raw)
	if len(p.errs) > 0 {
		return nil, p.errs.sorted()
	}
	return p.spec, nil
}

// Known kinds of keys and scripts (what a key holds, what a script does).
var kinds = set("rate_limit", "marker", "idempotency", "lock", "lease", "fence", "presence", "snapshot", "task", "task_poll", "cache")

// Known value types of keys.
var valueTypes = set("string", "counter", "hash", "zset", "msgpack")

var (
	envRe    = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)
	codeRe   = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)
	prefixRe = regexp.MustCompile(`^[A-Za-z0-9._:-]+$`)
)

type parser struct {
	file string
	ln   lines
	spec *Spec
	errs List

	instances map[string]*Instance
	dbs       map[string]*DB
	users     map[string]*User
	enums     map[string]*Enum
	keys      map[string]*Key
}

func (p *parser) pos(path string) Pos {
	for path != "" {
		if l, ok := p.ln[path]; ok {
			return Pos{File: p.file, Line: l}
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			break
		}
		path = path[:i]
	}
	return Pos{File: p.file, Line: 1}
}

func (p *parser) errf(path, entry, format string, args ...any) {
	p.errs = append(p.errs, &Error{Pos: p.pos(path), Entry: entry, Msg: fmt.Sprintf(format, args...)})
}

func (p *parser) build(raw *rawSpec) {
	if raw.Version != 1 {
		p.errf("version", "", "version must be 1, got %d", raw.Version)
	}
	p.buildEnums(raw)
	p.buildInstances(raw)
	p.buildUsers(raw)
	p.resolveDBUsers(raw)
	p.buildKeys(raw)
	p.buildChannels(raw)
	p.buildScripts(raw)
	p.checkOverlaps()
	p.checkReplyTypes()
}

// checkReplyTypes: scripts that share a reply type_name must declare the same fields.
func (p *parser) checkReplyTypes() {
	first := map[string]*Script{}
	for _, s := range p.spec.Scripts {
		n := s.Reply.TypeName
		if n == "" {
			continue
		}
		if f, ok := first[n]; ok {
			if f.Reply.Signature() != s.Reply.Signature() {
				p.errs = append(p.errs, &Error{Pos: s.Reply.Pos, Entry: fmt.Sprintf("script %q", s.Name), Msg: fmt.Sprintf("reply type_name %s is also script %q's (line %d), with other fields", n, f.Name, f.Line)})
			}
			continue
		}
		first[n] = s
	}
}

func (p *parser) buildEnums(raw *rawSpec) {
	p.enums = map[string]*Enum{}
	for _, name := range sortedKeys(raw.Enums) {
		r := raw.Enums[name]
		path, entry := "enums."+name, fmt.Sprintf("enum %q", name)
		e := &Enum{Pos: p.pos(path), Name: name, Seed: r.Seed, Values: r.Values}
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
	for _, name := range sortedKeys(raw.Instances) {
		r := raw.Instances[name]
		path, entry := "instances."+name, fmt.Sprintf("instance %q", name)
		in := &Instance{Pos: p.pos(path), Name: name, Seed: r.Seed, Topology: r.Topology}
		if !identOK(name) {
			p.errf(path, entry, "name must be [a-z][a-z0-9_]*")
		}
		switch r.Topology {
		case "standalone", "cluster":
		case "":
			p.errf(path, entry, "topology is missing: standalone or cluster")
		default:
			p.errf(path+".topology", entry, "topology %q: want standalone or cluster", r.Topology)
		}
		in.Server = p.server(path, entry, r.Server)
		for i, f := range r.Forbid {
			fp := fmt.Sprintf("%s.forbid[%d]", path, i)
			if !kinds[f.Kind] {
				p.errf(fp, entry, "forbid: unknown kind %q (known: %s)", f.Kind, keysOf(kinds))
			}
			in.Forbid = append(in.Forbid, Forbid{Pos: p.pos(fp), Kind: f.Kind, Seed: f.Seed})
		}
		if len(r.DBs) == 0 {
			p.errf(path, entry, "no dbs declared")
		}
		indexes := map[int]string{}
		for _, dbName := range sortedKeys(r.DBs) {
			rd := r.DBs[dbName]
			dp, dentry := path+".dbs."+dbName, fmt.Sprintf("db %s.%s", name, dbName)
			d := &DB{Pos: p.pos(dp), Instance: in, Name: dbName, URLEnv: rd.URLEnv, Seed: rd.Seed, Doc: rd.Doc}
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
			if rd.Legacy != nil {
				lp := dp + ".legacy"
				lg := &Legacy{Pos: p.pos(lp), State: rd.Legacy.State}
				if lg.State != LegacyAlive && lg.State != LegacyCutOver {
					p.errf(lp, dentry, "legacy state %q: want %s or %s", lg.State, LegacyAlive, LegacyCutOver)
				}
				lg.PollBudget = p.duration(lp+".poll_budget", dentry, "poll_budget", rd.Legacy.PollBudget, true)
				lg.RecoveryBudget = p.duration(lp+".recovery_budget", dentry, "recovery_budget", rd.Legacy.RecoveryBudget, true)
				d.Legacy = lg
			}
			in.DBs = append(in.DBs, d)
			p.dbs[d.ID()] = d
		}
		sort.Slice(in.DBs, func(i, j int) bool { return in.DBs[i].Index < in.DBs[j].Index })
		p.instances[name] = in
		p.spec.Instances = append(p.spec.Instances, in)
	}
}

// evictionPolicies are Redis's maxmemory-policy values.
var evictionPolicies = set("noeviction", "allkeys-lru", "allkeys-lfu", "allkeys-random", "volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl")

// server resolves the optional server section.
func (p *parser) server(path, entry string, r *rawServer) Server {
	sp := path + ".server"
	if r == nil {
		return Server{} // optional: luagen config refuses an instance without one
	}
	s := Server{Pos: p.pos(sp), Persistence: r.Persistence.Mode, PersistenceSeed: r.Persistence.Seed,
		EvictionPolicy: r.Eviction.Policy, EvictionReason: r.Eviction.Reason, TBD: r.TBD}
	if s.Persistence != PersistAOF && s.Persistence != PersistNone {
		p.errf(sp+".persistence", entry, "persistence mode %q: want %s or %s", s.Persistence, PersistAOF, PersistNone)
	}
	if s.PersistenceSeed == "" {
		p.errf(sp+".persistence", entry, "persistence needs a seed reference")
	}
	if !evictionPolicies[s.EvictionPolicy] {
		p.errf(sp+".eviction", entry, "eviction policy %q: want one of %s", s.EvictionPolicy, keysOf(evictionPolicies))
	}
	if s.EvictionReason == "" {
		p.errf(sp+".eviction", entry, "eviction needs a reason")
	}
	return s
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
// EVALSHA and SCRIPT LOAD of the declared scripts itself), and commands that
// reach another database (MOVE, SWAPDB, COPY and MIGRATE with their DB option;
// SELECT is granted only through a user's select).
func NeverGranted(c *rediscmd.Command) string {
	switch {
	case c.Has(rediscmd.FlagAdmin):
		return "an administrative command (admin flag)"
	case c.InCategory("dangerous"):
		return "in Redis's @dangerous ACL category"
	case c.InCategory("scripting"):
		return "it runs or manages scripts (@scripting); the generated ACL grants EVALSHA and SCRIPT LOAD of the declared scripts itself"
	case c.Name == "move" || c.Name == "swapdb":
		return "it moves data into another database, which no key pattern of the ACL confines"
	case c.HasToken("DB"):
		return "its DB option writes into another database, which no ACL rule can forbid"
	case c.Name == "select":
		return "SELECT is granted through the user's select field, with its reason"
	}
	return ""
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
	for _, name := range sortedKeys(raw.Users) {
		r := raw.Users[name]
		path, entry := "users."+name, fmt.Sprintf("user %q", name)
		u := &User{Pos: p.pos(path), Name: name, Seed: r.Seed}
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
		pr := &Prefix{Pos: p.pos(pp), Prefix: r.Prefix, Seed: r.Seed, Reason: r.Reason}
		if !prefixRe.MatchString(r.Prefix) {
			p.errf(pp, entry, "prefix %q: want literal text [A-Za-z0-9._:-]+ (no glob, brace or space)", r.Prefix)
		}
		if r.Seed == "" && r.Reason == "" {
			p.errf(pp, entry, "prefix %q: say where it comes from (seed) or why it is granted (reason)", r.Prefix)
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
	for _, name := range sortedKeys(raw.Keys) {
		r := raw.Keys[name]
		path, entry := "keys."+name, fmt.Sprintf("key %q", name)
		k := &Key{Pos: p.pos(path), Name: name, Seed: r.Seed, Doc: r.Doc, Kind: r.Kind, Value: r.Value, Fields: r.Fields, MaxBytes: r.MaxBytes}
		if !identOK(name) {
			p.errf(path, entry, "name must be [a-z][a-z0-9_]*")
		}
		k.DB = p.dbs[r.DB]
		if k.DB == nil {
			p.errf(path, entry, "db %q is not declared (want instance.db, e.g. vm1.db0)", r.DB)
		}
		if !kinds[r.Kind] {
			p.errf(path, entry, "kind %q: want one of %s", r.Kind, keysOf(kinds))
		}
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
		k.Pattern = p.pattern(path, entry, r.Pattern, r.Params)
		k.TTL = p.ttl(path, entry, r.TTL)
		if k.DB != nil && k.DB.User != nil && k.Pattern.Segments != nil {
			p.checkOwner(path, entry, k)
		}
		p.keys[name] = k
		p.spec.Keys = append(p.spec.Keys, k)
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
	for _, name := range sortedKeys(params) {
		resolved[name] = p.param(path+".params."+name, entry, name, params[name])
	}
	pat, err := parsePattern(raw, resolved)
	if err != nil {
		p.errf(path+".pattern", entry, "pattern %q: %v", raw, err)
		return Pattern{}
	}
	return pat
}

func (p *parser) param(path, entry, name string, r rawParam) *Param {
	entry = fmt.Sprintf("%s placeholder {%s}", entry, name)
	prm := &Param{Pos: p.pos(path), Name: name, Type: r.Type, Doc: r.Doc, Len: r.Len, MaxLen: r.MaxLen, Encode: r.Encode}
	extra := func(field string, set bool) {
		if set {
			p.errf(path, entry, "%s does not apply to type %s", field, r.Type)
		}
	}
	switch r.Type {
	case "":
		p.errf(path, entry, "type is missing: want one of uuid, int, hex, name, enum, sha256, hmac")
	case TypeUUID, TypeSHA256, TypeHMAC:
		extra("min/max", r.Min != "" || r.Max != "")
		extra("len", r.Len != 0)
		extra("max_len", r.MaxLen != 0)
		extra("enum", r.Enum != "")
	case TypeInt:
		prm.Min = p.int64(path+".min", entry, "min", r.Min, 0)
		prm.Max = p.int64(path+".max", entry, "max", r.Max, 1<<53-1)
		if prm.Min > prm.Max {
			p.errf(path, entry, "min %d is above max %d", prm.Min, prm.Max)
		}
		extra("len", r.Len != 0)
		extra("enum", r.Enum != "")
	case TypeHex:
		if r.Len <= 0 || r.Len > 128 {
			p.errf(path, entry, "hex needs len between 1 and 128")
		}
		extra("min/max", r.Min != "" || r.Max != "")
		extra("max_len", r.MaxLen != 0)
		extra("enum", r.Enum != "")
	case TypeName:
		if prm.MaxLen == 0 {
			prm.MaxLen = 64
		}
		if prm.MaxLen < 1 || prm.MaxLen > 256 {
			p.errf(path, entry, "max_len %d: want 1..256", prm.MaxLen)
		}
		extra("min/max", r.Min != "" || r.Max != "")
		extra("len", r.Len != 0)
		extra("enum", r.Enum != "")
	case TypeEnum:
		extra("min/max", r.Min != "" || r.Max != "")
		extra("len", r.Len != 0)
		extra("max_len", r.MaxLen != 0)
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
		p.errf(path+".type", entry, "unknown type %q: want one of uuid, int, hex, name, enum, sha256, hmac", r.Type)
	}
	if r.Type != TypeEnum && r.Encode != "" {
		p.errf(path, entry, "encode applies only to enum")
	}
	return prm
}

func (p *parser) ttl(path, entry string, r *rawTTL) TTL {
	if r == nil {
		p.errf(path, entry, "ttl is missing: every key expires (fixed, window_jitter, heartbeat or clamped)")
		return TTL{}
	}
	tp := path + ".ttl"
	t := TTL{Pos: p.pos(tp), Rule: r.Rule, Source: r.Source}
	unused := func(field, v string) {
		if v != "" {
			p.errf(tp, entry, "ttl %s does not apply to rule %s", field, r.Rule)
		}
	}
	switch r.Rule {
	case TTLFixed, TTLHeartbeat:
		t.Value = p.duration(tp+".value", entry, "ttl value", r.Value, true)
		unused("max_jitter", r.MaxJitter)
		unused("max", r.Max)
		unused("source", r.Source)
	case TTLWindowJitter:
		t.MaxJitter = p.duration(tp+".max_jitter", entry, "ttl max_jitter", r.MaxJitter, false)
		unused("value", r.Value)
		unused("max", r.Max)
		unused("source", r.Source)
	case TTLClamped:
		t.Max = p.duration(tp+".max", entry, "ttl max", r.Max, true)
		if t.Source == "" {
			t.Source = "config"
		}
		if t.Source != "config" && t.Source != "dns_answer" {
			p.errf(tp, entry, "ttl source %q: want config or dns_answer", r.Source)
		}
		unused("value", r.Value)
		unused("max_jitter", r.MaxJitter)
	case "":
		p.errf(tp, entry, "ttl rule is missing: every key expires (fixed, window_jitter, heartbeat or clamped)")
	default:
		p.errf(tp+".rule", entry, "unknown ttl rule %q: want fixed, window_jitter, heartbeat or clamped", r.Rule)
	}
	return t
}

func (p *parser) buildChannels(raw *rawSpec) {
	for _, name := range sortedKeys(raw.Channels) {
		r := raw.Channels[name]
		path, entry := "channels."+name, fmt.Sprintf("channel %q", name)
		c := &Channel{Pos: p.pos(path), Name: name, Seed: r.Seed, MaxBytes: r.MaxBytes}
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
		c.Pattern = p.pattern(path, entry, r.Pattern, r.Params)
		if c.Instance != nil && c.Pattern.Segments != nil {
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
		p.spec.Channels = append(p.spec.Channels, c)
	}
}

func (p *parser) buildScripts(raw *rawSpec) {
	for _, name := range sortedKeys(raw.Scripts) {
		r := raw.Scripts[name]
		path, entry := "scripts."+name, fmt.Sprintf("script %q", name)
		s := &Script{Pos: p.pos(path), Name: name, Seed: r.Seed, Doc: r.Doc, Kind: r.Kind, ReadOnly: r.ReadOnly, CrossSlot: r.CrossSlot}
		if !identOK(name) {
			p.errf(path, entry, "name must be [a-z][a-z0-9_]* (it is also the file name)")
		}
		s.Instance = p.instances[r.Instance]
		if s.Instance == nil {
			p.errf(path, entry, "instance %q is not declared", r.Instance)
		}
		if !kinds[r.Kind] {
			p.errf(path, entry, "kind %q: want one of %s", r.Kind, keysOf(kinds))
		}
		p.scriptKeys(path, entry, s, r.Keys)
		p.scriptArgv(path, entry, s, r.Argv)
		p.scriptReply(path, entry, s, r.Reply)
		codes := map[string]bool{}
		for i, re := range r.Errors {
			ep := fmt.Sprintf("%s.errors[%d]", path, i)
			if !codeRe.MatchString(re.Code) {
				p.errf(ep, entry, "error code %q: want [A-Z][A-Z0-9_]*", re.Code)
			}
			if codes[re.Code] {
				p.errf(ep, entry, "error code %s declared twice", re.Code)
			}
			codes[re.Code] = true
			s.Errors = append(s.Errors, &ScriptError{Pos: p.pos(ep), Code: re.Code, Doc: re.Doc})
		}
		p.spec.Scripts = append(p.spec.Scripts, s)
	}
}

func (p *parser) scriptKeys(path, entry string, s *Script, raw []rawScriptKey) {
	if len(raw) == 0 {
		p.errf(path, entry, "keys is empty: a script touches only the keys passed in KEYS")
	}
	names := map[string]bool{}
	for i, rk := range raw {
		kp := fmt.Sprintf("%s.keys[%d]", path, i)
		kentry := fmt.Sprintf("%s KEYS[%d] %q", entry, i+1, rk.Name)
		sk := &ScriptKey{Pos: p.pos(kp), Name: rk.Name}
		if !identOK(rk.Name) {
			p.errf(kp, kentry, "name must be [a-z][a-z0-9_]*")
		}
		if names[rk.Name] {
			p.errf(kp, kentry, "name used twice")
		}
		names[rk.Name] = true
		if len(rk.OneOf) == 0 {
			p.errf(kp, kentry, "one_of is empty: name the declared keys this position takes")
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

var argTypes = "int, bool, string, bytes, duration_ms, token, hex, uuid, name"

func (p *parser) scriptArgv(path, entry string, s *Script, raw []rawArg) {
	names := map[string]bool{}
	for i, ra := range raw {
		ap := fmt.Sprintf("%s.argv[%d]", path, i)
		aentry := fmt.Sprintf("%s ARGV[%d] %q", entry, i+1, ra.Name)
		a := &Arg{Pos: p.pos(ap), Name: ra.Name, Type: ra.Type, Doc: ra.Doc, MaxBytes: ra.MaxBytes, Len: ra.Len, MaxLen: ra.MaxLen}
		if !identOK(ra.Name) {
			p.errf(ap, aentry, "name must be [a-z][a-z0-9_]*")
		}
		if names[ra.Name] {
			p.errf(ap, aentry, "name used twice")
		}
		names[ra.Name] = true
		bad := func(cond bool, field string) {
			if cond {
				p.errf(ap, aentry, "%s does not apply to type %s", field, ra.Type)
			}
		}
		switch ra.Type {
		case ArgInt:
			a.Min = p.int64(ap+".min", aentry, "min", ra.Min, -(1<<53 - 1))
			a.Max = p.int64(ap+".max", aentry, "max", ra.Max, 1<<53-1)
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
					p.errf(ap, aentry, "ttl_of key %q has a %s TTL; only fixed and heartbeat TTLs are constants", ra.TTLOf, a.TTLOf.TTL.Rule)
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
			if a.MaxLen == 0 {
				a.MaxLen = 64
			}
			if a.MaxLen < 1 || a.MaxLen > 256 {
				p.errf(ap, aentry, "max_len %d: want 1..256", a.MaxLen)
			}
			bad(ra.Min != "" || ra.Max != "" || ra.MaxBytes != 0 || ra.Len != 0 || ra.TTLOf != "", "min/max/max_bytes/len/ttl_of")
		case ArgBool, ArgToken, ArgUUID:
			bad(ra.Min != "" || ra.Max != "" || ra.MaxBytes != 0 || ra.Len != 0 || ra.MaxLen != 0 || ra.TTLOf != "", "min/max/max_bytes/len/max_len/ttl_of")
		case "":
			p.errf(ap, aentry, "type is missing: want one of %s", argTypes)
		default:
			p.errf(ap+".type", aentry, "ARGV type %q does not exist: want one of %s", ra.Type, argTypes)
		}
		s.Argv = append(s.Argv, a)
	}
}

var replyTypes = "int, bool, string, bytes, duration_ms, time_ms, enum, strings"

func (p *parser) scriptReply(path, entry string, s *Script, r *rawReply) {
	rp := path + ".reply"
	if r == nil {
		p.errf(path, entry, "reply is missing: declare its fields, or its type and name")
		return
	}
	s.Reply.Pos = p.pos(rp)
	field := func(fp, name, typ, doc, enum string, inArray bool) *Field {
		f := &Field{Pos: p.pos(fp), Name: name, Type: typ, Doc: doc}
		fentry := fmt.Sprintf("%s reply %q", entry, name)
		if !identOK(name) {
			p.errf(fp, fentry, "name must be [a-z][a-z0-9_]*")
		}
		switch typ {
		case ReplyInt, ReplyBool, ReplyString, ReplyBytes, ReplyDurationMS, ReplyTimeMS:
		case ReplyStrings:
			if inArray {
				p.errf(fp, fentry, "strings is a whole reply, not a field of one")
			}
		case ReplyEnum:
			f.Enum = p.enums[enum]
			if f.Enum == nil {
				p.errf(fp, fentry, "enum %q is not declared", enum)
			}
		case "":
			p.errf(fp, fentry, "type is missing: want one of %s", replyTypes)
		default:
			p.errf(fp+".type", fentry, "reply type %q does not exist: want one of %s", typ, replyTypes)
		}
		if typ != ReplyEnum && enum != "" {
			p.errf(fp, fentry, "enum applies only to type enum")
		}
		return f
	}
	switch {
	case len(r.Fields) > 0 && (r.Type != "" || r.Name != ""):
		p.errf(rp, entry, "reply has both fields and type/name: choose an array of fields or one value")
	case len(r.Fields) > 0:
		s.Reply.TypeName = r.TypeName
		if r.TypeName != "" && !identOK(r.TypeName) {
			p.errf(rp, entry, "type_name %q: want [a-z][a-z0-9_]*", r.TypeName)
		}
		names := map[string]bool{}
		for i, rf := range r.Fields {
			fp := fmt.Sprintf("%s.fields[%d]", rp, i)
			if names[rf.Name] {
				p.errf(fp, entry, "reply field %q declared twice", rf.Name)
			}
			names[rf.Name] = true
			s.Reply.Fields = append(s.Reply.Fields, field(fp, rf.Name, rf.Type, rf.Doc, rf.Enum, true))
		}
	case r.Type != "" || r.Name != "":
		if r.TypeName != "" {
			p.errf(rp, entry, "type_name names an array reply's type; a one-value reply has none")
		}
		s.Reply.Value = field(rp, r.Name, r.Type, r.Doc, r.Enum, false)
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
			if a.DB == nil || b.DB == nil || a.DB.Instance != b.DB.Instance || a.Pattern.Segments == nil || b.Pattern.Segments == nil {
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
			if w := overlapWitness(a.Pattern, b.Pattern); w != "" {
				p.errs = append(p.errs, &Error{Pos: second.Pos, Entry: entry, Msg: fmt.Sprintf("pattern %q overlaps key %q (line %d): both match %q", second.Pattern.Raw, first.Name, first.Line, w)})
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

// ParseDuration parses a Go duration ("30s", "24h") or whole days ("30d").
func ParseDuration(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil {
			return 0, fmt.Errorf("duration %q: want a Go duration (30s, 24h) or whole days (30d)", s)
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

func keysOf(m map[string]bool) string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
