// Package sizing estimates the memory of a Redis instance from measurement: for
// each key of the spec it creates representative keys on a scratch
// redis-server through the instance's own scripts, measures them with MEMORY
// USAGE, adds what a key costs beyond its own allocations (its entries and
// buckets in the keyspace and expires dictionaries), and multiplies by the
// number of live keys a cardinality file declares (a count, or a rate times
// the key's lifetime). It prints the usual provisioning estimate (total x 1.5
// fragmentation x 1.3 growth), a maxmemory and the number of cluster shards
// that implies. docs/sizing.md describes the file and the model.
package sizing

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/gen/strictyaml"
	"go.yaml.in/yaml/v3"
)

// ErrInvalid matches every error of a cardinality file.
var ErrInvalid = errors.New("invalid sizing file")

// Error is one problem of a cardinality file, at its line.
type Error struct {
	File  string
	Line  int
	Entry string // "key \"session\"", or ""
	Msg   string
}

func (e *Error) Error() string {
	if e.Entry == "" {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s:%d: %s: %s", e.File, e.Line, e.Entry, e.Msg)
}

// Is matches ErrInvalid.
func (e *Error) Is(target error) bool { return target == ErrInvalid }

// List is every problem found, sorted by line; it matches ErrInvalid.
type List []*Error

func (l List) Error() string { return strictyaml.Join(l) }

// Is matches ErrInvalid.
func (l List) Is(target error) bool { return target == ErrInvalid }

// The raw types mirror the file field for field; decoding is strict.
type rawFile struct {
	Version          int                 `yaml:"version"`
	Instance         string              `yaml:"instance"`
	Source           string              `yaml:"source"`
	DeploymentPrefix string              `yaml:"deployment_prefix"`
	Samples          int                 `yaml:"samples"`
	Fragmentation    float64             `yaml:"fragmentation"`
	Growth           float64             `yaml:"growth"`
	ShardMaxmemory   string              `yaml:"shard_maxmemory"`
	Fixed            []rawFixed          `yaml:"fixed"`
	Keys             map[string]rawEntry `yaml:"keys"`
	Utilisation      string              `yaml:"utilisation"`
	Rates            map[string]rawRate  `yaml:"rates"`
}

type rawFixed struct {
	Name   string `yaml:"name"`
	Bytes  string `yaml:"bytes"`
	Source string `yaml:"source"`
}

type rawEntry struct {
	Source   string            `yaml:"source"`
	Count    *int64            `yaml:"count"`
	Rate     string            `yaml:"rate"`
	Lifetime string            `yaml:"lifetime"`
	Calls    int               `yaml:"calls"`
	Vary     []string          `yaml:"vary"`
	Params   map[string]string `yaml:"params"`
	Steps    []rawStep         `yaml:"steps"`
}

type rawStep struct {
	Script string               `yaml:"script"`
	Keys   map[string]string    `yaml:"keys"`
	Args   map[string]yaml.Node `yaml:"args"`
}

// File is a parsed cardinality file: how many keys of each pattern an instance
// holds and how to make a representative one.
type File struct {
	Name     string // the file's name in errors
	Instance *keyspec.Instance
	Source   string
	// Prefix is the deployment prefix keys are built with (an instance with a
	// deployment_prefix), or "".
	Prefix         string
	Samples        int     // keys created and measured per entry
	Fragmentation  float64 // the allocator/fragmentation factor
	Growth         float64 // the growth reserve
	ShardMaxmemory int64   // the maxmemory one cluster shard may have
	Fixed          []Fixed
	Entries        []*Entry // sorted by key name
	KeysLine       int      // the line of keys:, for errors about the whole list
	// Utilisation is the share of a shard's thread the declared rates may
	// use (DefaultUtilisation unless the file says).
	Utilisation float64
	Rates       []*Rate // sorted by script name; empty without rates:
	RatesLine   int
}

// Fixed is memory that no key pattern accounts for (Pub/Sub output buffers).
type Fixed struct {
	Line   int    `json:"-"`
	Name   string `json:"name"`
	Bytes  int64  `json:"bytes"`
	Source string `json:"source"`
}

// Entry is one key pattern's cardinality and recipe.
type Entry struct {
	Line   int
	Key    *keyspec.Key
	Source string
	// Count is the declared number of live keys; 0 when Rate is set.
	Count int64
	// Rate is how many keys are created per second; live keys are Rate x Lifetime.
	Rate     float64
	RateText string
	// Lifetime is how long one key lives: the spec's TTL (fixed, heartbeat) or
	// what the file says; LifetimeText as the file or the spec writes it.
	Lifetime     time.Duration
	LifetimeText string
	Calls        int      // how many times Steps run on each sample key
	Vary         []string // placeholders that take a new value on each call
	Params       map[string]string
	Steps        []*Step
}

// Step is one script call of a recipe.
type Step struct {
	Line   int
	Script *keyspec.Script
	Keys   map[string]*keyspec.Key // KEYS position name -> the key it takes (when not the entry's)
	Args   map[string]argValue     // ARGV name -> value
}

// argValue is an argument as the file gives it: a scalar, or a random string of
// Size bytes.
type argValue struct {
	Line   int
	Scalar string
	Size   int // > 0: a random string of this many bytes
}

// Default provisioning factors: RAM = data x 1.5 fragmentation x 1.3 growth.
const (
	DefaultFragmentation = 1.5
	DefaultGrowth        = 1.3
	DefaultSamples       = 100
	maxSamples           = 100000
	maxCalls             = 100000
)

// Load reads and parses a cardinality file of spec.
func Load(path string, spec *keyspec.Spec) (*File, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("sizing: %w", err)
	}
	return Parse(path, src, spec)
}

var rawNames = strings.NewReplacer("sizing.rawFile", "the file", "sizing.rawFixed", "a fixed entry",
	"sizing.rawEntry", "a key entry", "sizing.rawStep", "a step", "sizing.rawRate", "a rate", "sizing.rawBranch", "a branch")

// Parse parses and checks a cardinality file. name is the file's name in
// errors. Every error names the file and line; the error is a List.
func Parse(name string, src []byte, spec *keyspec.Spec) (*File, error) {
	var raw rawFile
	lines, _, err := strictyaml.Decode(src, &raw)
	switch {
	case errors.Is(err, strictyaml.ErrEmpty):
		return nil, List{{File: name, Line: 1, Msg: "the file is empty"}}
	case err != nil:
		return nil, yamlErrors(name, err)
	}
	p := &parser{name: name, lines: lines}
	f := p.file(&raw, spec)
	if len(p.errs) > 0 {
		sort.SliceStable(p.errs, func(i, j int) bool { return p.errs[i].Line < p.errs[j].Line })
		return nil, p.errs
	}
	return f, nil
}

func yamlErrors(name string, err error) error {
	var list List
	for _, m := range strictyaml.Messages(err) {
		e := &Error{File: name, Line: 1, Msg: friendly(strings.TrimPrefix(m, "yaml: "))}
		if line, msg, ok := strictyaml.MessageLine(m); ok {
			e.Line = line
			e.Msg = friendly(msg)
		}
		list = append(list, e)
	}
	return list
}

// friendly names the raw types of a decoder's message as the file does ("field
// x not found in a key entry", not "in type a key entry").
func friendly(msg string) string {
	return strings.ReplaceAll(rawNames.Replace(msg), " not found in type ", " not found in ")
}

type parser struct {
	name  string
	lines strictyaml.Lines
	errs  List
}

func (p *parser) errf(path, entry, format string, args ...any) {
	p.errs = append(p.errs, &Error{File: p.name, Line: p.lines.Line(path), Entry: entry, Msg: fmt.Sprintf(format, args...)})
}

func (p *parser) file(raw *rawFile, spec *keyspec.Spec) *File {
	f := &File{Name: p.name, Source: raw.Source, Prefix: raw.DeploymentPrefix, Samples: raw.Samples,
		Fragmentation: raw.Fragmentation, Growth: raw.Growth}
	if raw.Version != 1 {
		p.errf("version", "", "version must be 1, got %d", raw.Version)
	}
	f.Instance = spec.Instance(raw.Instance)
	if f.Instance == nil {
		p.errf("instance", "", "instance %q is not declared in %s", raw.Instance, spec.File)
		return f
	}
	in := f.Instance
	switch {
	case in.Prefix != nil && f.Prefix == "":
		p.errf("instance", "", "instance %s has a deployment prefix: give deployment_prefix, a representative one (its length counts in every key)", in.Name)
	case in.Prefix == nil && f.Prefix != "":
		p.errf("deployment_prefix", "", "instance %s has no deployment_prefix in %s", in.Name, spec.File)
	case in.Prefix != nil:
		if err := checkPrefix(f.Prefix, in.Prefix.MaxLen, in.Prefix.Reserved); err != nil {
			p.errf("deployment_prefix", "", "%v", err)
		}
	}
	if f.Samples == 0 {
		f.Samples = DefaultSamples
	} else if f.Samples < 1 || f.Samples > maxSamples {
		p.errf("samples", "", "samples %d: want 1..%d", f.Samples, maxSamples)
	}
	if f.Fragmentation == 0 {
		f.Fragmentation = DefaultFragmentation
	} else if f.Fragmentation < 1 || f.Fragmentation > 10 {
		p.errf("fragmentation", "", "fragmentation %g: want 1..10 (the seeds use 1.5)", f.Fragmentation)
	}
	if f.Growth == 0 {
		f.Growth = DefaultGrowth
	} else if f.Growth < 1 || f.Growth > 10 {
		p.errf("growth", "", "growth %g: want 1..10 (the seeds use 1.3)", f.Growth)
	}
	if raw.ShardMaxmemory == "" {
		p.errf("instance", "", "shard_maxmemory is missing: the maxmemory one cluster shard may have (4gb), to count the shards")
	} else if n, err := ParseBytes(raw.ShardMaxmemory); err != nil || n <= 0 {
		p.errf("shard_maxmemory", "", "shard_maxmemory %q: want a size such as 4gb, 512mb or 1073741824", raw.ShardMaxmemory)
	} else {
		f.ShardMaxmemory = n
	}
	for i, r := range raw.Fixed {
		fp := fmt.Sprintf("fixed[%d]", i)
		fx := Fixed{Line: p.lines.Line(fp), Name: r.Name, Source: r.Source}
		entry := fmt.Sprintf("fixed %q", r.Name)
		if r.Name == "" {
			p.errf(fp, "", "a fixed entry needs a name")
		}
		if r.Source == "" {
			p.errf(fp, entry, "a fixed entry needs a source: where the number comes from")
		}
		n, err := ParseBytes(r.Bytes)
		if err != nil || n < 0 {
			p.errf(fp+".bytes", entry, "bytes %q: want a size such as 16mb", r.Bytes)
		}
		fx.Bytes = n
		f.Fixed = append(f.Fixed, fx)
	}
	f.KeysLine = p.lines.Line("keys")
	for _, name := range slices.Sorted(maps.Keys(raw.Keys)) {
		if e := p.entry("keys."+name, name, raw.Keys[name], spec, in); e != nil {
			f.Entries = append(f.Entries, e)
		}
	}
	p.rates(raw, spec, f)
	return f
}

func (p *parser) entry(path, name string, r rawEntry, spec *keyspec.Spec, in *keyspec.Instance) *Entry {
	entry := fmt.Sprintf("key %q", name)
	k := spec.Key(name)
	if k == nil || k.Instance() != in || !k.Live() {
		p.errf(path, entry, "not a live key of instance %s in %s", in.Name, spec.File)
		return nil
	}
	e := &Entry{Line: p.lines.Line(path), Key: k, Source: r.Source, Calls: r.Calls, Vary: r.Vary, Params: r.Params}
	switch {
	case r.Count != nil && r.Rate != "":
		p.errf(path, entry, "set count or rate, not both")
	case r.Count != nil:
		e.Count = *r.Count
		if e.Count < 0 {
			p.errf(path+".count", entry, "count %d: want 0 or more live keys", e.Count)
		}
		if r.Lifetime != "" {
			p.errf(path+".lifetime", entry, "lifetime applies with rate only (live keys = rate x lifetime)")
		}
	case r.Rate != "":
		rate, err := parseRate(r.Rate)
		if err != nil {
			p.errf(path+".rate", entry, "%v", err)
			break
		}
		e.Rate, e.RateText = rate, r.Rate
		e.Lifetime = p.lifetime(path, entry, k, r.Lifetime)
		e.LifetimeText = r.Lifetime
		if e.LifetimeText == "" {
			e.LifetimeText = shortDuration(e.Lifetime)
		}
	default:
		p.errf(path, entry, "give count (live keys) or rate (keys created per second, 120/s, 200000/24h)")
	}
	if e.Calls == 0 {
		e.Calls = 1
	} else if e.Calls < 1 || e.Calls > maxCalls {
		p.errf(path+".calls", entry, "calls %d: want 1..%d", e.Calls, maxCalls)
	}
	params := map[string]*keyspec.Param{}
	for _, prm := range k.Pattern.Params() {
		params[prm.Name] = prm
	}
	for _, v := range r.Vary {
		if params[v] == nil && !p.placeholderOfSteps(v, r.Steps, spec) {
			p.errf(path+".vary", entry, "vary: {%s} is not a placeholder of %s or of the keys its steps take", v, k.Name)
		}
	}
	for pn, v := range r.Params {
		prm := params[pn]
		if prm == nil {
			prm = p.stepParam(pn, r.Steps, spec)
		}
		if prm == nil {
			p.errf(path+".params."+pn, entry, "params: {%s} is not a placeholder of %s or of the keys its steps take", pn, k.Name)
			continue
		}
		if _, err := partValue(prm, v); err != nil {
			p.errf(path+".params."+pn, entry, "params: {%s}: %v", pn, err)
		}
	}
	if len(r.Steps) == 0 {
		p.errf(path, entry, "steps are missing: the script calls that create a representative key")
	}
	touched := false
	for i, rs := range r.Steps {
		sp := fmt.Sprintf("%s.steps[%d]", path, i)
		st := p.step(sp, entry, rs, spec, in, k, false)
		if st == nil {
			continue
		}
		for _, pos := range st.Script.Keys {
			if st.Keys[pos.Name] == k || (st.Keys[pos.Name] == nil && slices.Contains(pos.OneOf, k)) {
				touched = true
			}
		}
		e.Steps = append(e.Steps, st)
	}
	if len(r.Steps) > 0 && len(e.Steps) == len(r.Steps) && !touched {
		p.errf(path+".steps", entry, "no step takes key %s in its KEYS", k.Name)
	}
	have := map[string]bool{}
	for name := range params {
		have[name] = true
	}
	for name := range r.Params {
		have[name] = true
	}
	for i, st := range e.Steps {
		sp := fmt.Sprintf("%s.steps[%d]", path, i)
		p.resolveKeys(sp, entry, st, k, have)
		p.checkArgs(sp, entry, st, have)
	}
	return e
}

// checkArgs: every argument of a step has a value: the file's, the key's TTL
// (ttl_of), a placeholder of the same name, empty (optional), or a generated
// token, hex string or UUID.
func (p *parser) checkArgs(sp, entry string, st *Step, have map[string]bool) {
	placeholders := map[string]bool{}
	for name := range have {
		placeholders[name] = true
	}
	for _, k := range st.Keys {
		for _, prm := range k.Pattern.Params() {
			placeholders[prm.Name] = true
		}
	}
	for _, a := range st.Script.Argv {
		if _, ok := st.Args[a.Name]; ok || a.TTLOf != nil || a.Optional || placeholders[a.Name] {
			continue
		}
		if _, ok := autoArg(a); ok {
			continue
		}
		p.errf(sp, entry, "ARGV %s of %s (%s) has no value: give it under args", a.Name, st.Script.Name, a.Type)
	}
}

// resolveKeys picks the key of each KEYS position the file does not name: the
// entry's key where the position takes it, else the key that shares the most
// placeholders with the entry's (the fence of the lock being sized); a tie is
// an error asking for keys:.
func (p *parser) resolveKeys(sp, entry string, st *Step, k *keyspec.Key, have map[string]bool) {
	for _, pos := range st.Script.Keys {
		if pos.Channel != nil || pos.Repeat != nil {
			p.errf(sp, entry, "KEYS position %s of %s passes a channel or repeats: luagen sizing does not measure such a script yet", pos.Name, st.Script.Name)
			continue
		}
		if st.Keys[pos.Name] != nil {
			continue
		}
		if slices.Contains(pos.OneOf, k) {
			st.Keys[pos.Name] = k
			continue
		}
		best, score, tie := (*keyspec.Key)(nil), -1, false
		for _, cand := range pos.OneOf {
			n := 0
			for _, prm := range cand.Pattern.Params() {
				if have[prm.Name] {
					n++
				}
			}
			switch {
			case n > score:
				best, score, tie = cand, n, false
			case n == score:
				tie = true
			}
		}
		if tie {
			p.errf(sp, entry, "KEYS position %s of %s may take %s: name the one to use under keys:", pos.Name, st.Script.Name, keyNames(pos.OneOf))
			continue
		}
		st.Keys[pos.Name] = best
	}
}

// lifetime is how long one key lives for rate x lifetime.
func (p *parser) lifetime(path, entry string, k *keyspec.Key, raw string) time.Duration {
	if raw != "" {
		d, err := keyspec.ParseDuration(raw)
		if err != nil || d <= 0 {
			p.errf(path+".lifetime", entry, "lifetime %q: want a positive duration (62s, 24h, 7d)", raw)
		}
		return d
	}
	switch k.TTL.Rule {
	case keyspec.TTLFixed, keyspec.TTLHeartbeat:
		return k.TTL.Value
	case keyspec.TTLNone:
		p.errf(path, entry, "key %s never expires (ttl none): give count, not rate", k.Name)
	default:
		p.errf(path, entry, "key %s's TTL is chosen at run time (%s): give lifetime, how long one lives", k.Name, k.TTL.Rule)
	}
	return 0
}

func (p *parser) placeholderOfSteps(name string, steps []rawStep, spec *keyspec.Spec) bool {
	return p.stepParam(name, steps, spec) != nil
}

// stepParam finds placeholder name in a key the steps may take.
func (p *parser) stepParam(name string, steps []rawStep, spec *keyspec.Spec) *keyspec.Param {
	for _, rs := range steps {
		s := spec.Script(rs.Script)
		if s == nil {
			continue
		}
		for _, pos := range s.Keys {
			for _, k := range pos.OneOf {
				for _, prm := range k.Pattern.Params() {
					if prm.Name == name {
						return prm
					}
				}
			}
		}
	}
	return nil
}

// step parses one script call; readOnlyOK admits a script that writes
// nothing (a rated call; a step must create its key).
func (p *parser) step(sp, entry string, rs rawStep, spec *keyspec.Spec, in *keyspec.Instance, k *keyspec.Key, readOnlyOK bool) *Step {
	s := spec.Script(rs.Script)
	if s == nil || s.Instance != in || !s.Live() {
		p.errf(sp+".script", entry, "script %q is not a live script of %s", rs.Script, in.Name)
		return nil
	}
	if s.ReadOnly && !readOnlyOK {
		p.errf(sp+".script", entry, "script %s is read-only: it creates nothing", s.Name)
		return nil
	}
	st := &Step{Line: p.lines.Line(sp), Script: s, Keys: map[string]*keyspec.Key{}, Args: map[string]argValue{}}
	ok := true
	for pos, kn := range rs.Keys {
		var sk *keyspec.ScriptKey
		for _, x := range s.Keys {
			if x.Name == pos {
				sk = x
			}
		}
		switch {
		case sk == nil:
			p.errf(sp+".keys."+pos, entry, "script %s has no KEYS position %q", s.Name, pos)
			ok = false
		case spec.Key(kn) == nil || !slices.Contains(sk.OneOf, spec.Key(kn)):
			p.errf(sp+".keys."+pos, entry, "KEYS position %s of %s takes %s, not %q", pos, s.Name, keyNames(sk.OneOf), kn)
			ok = false
		default:
			st.Keys[pos] = spec.Key(kn)
		}
	}
	args := map[string]*keyspec.Arg{}
	for _, a := range s.Argv {
		args[a.Name] = a
	}
	for an, node := range rs.Args {
		ap := sp + ".args." + an
		a := args[an]
		if a == nil {
			p.errf(ap, entry, "script %s has no ARGV %q", s.Name, an)
			ok = false
			continue
		}
		if a.TTLOf != nil {
			p.errf(ap, entry, "ARGV %s of %s is the TTL of %s, which the wrapper sends: leave it out", an, s.Name, a.TTLOf.Name)
			ok = false
			continue
		}
		v, err := argNode(a, &node)
		if err != nil {
			p.errf(ap, entry, "ARGV %s of %s: %v", an, s.Name, err)
			ok = false
			continue
		}
		v.Line = node.Line
		st.Args[an] = v
	}
	if !ok {
		return nil
	}
	return st
}

// argNode reads an argument's value: a scalar of its type, or {size: N} for a
// string or bytes argument.
func argNode(a *keyspec.Arg, n *yaml.Node) (argValue, error) {
	if n.Kind == yaml.MappingNode {
		if a.Type != keyspec.ArgString && a.Type != keyspec.ArgBytes {
			return argValue{}, fmt.Errorf("{size: N} applies to string and bytes arguments; %s is %s", a.Name, a.Type)
		}
		var m struct {
			Size int `yaml:"size"`
		}
		if err := n.Decode(&m); err != nil || len(n.Content) != 2 || n.Content[0].Value != "size" {
			return argValue{}, fmt.Errorf("want {size: N}")
		}
		if m.Size < 1 || (a.MaxBytes > 0 && m.Size > a.MaxBytes) {
			return argValue{}, fmt.Errorf("size %d: want 1..%d (its max_bytes)", m.Size, a.MaxBytes)
		}
		return argValue{Size: m.Size}, nil
	}
	if n.Kind != yaml.ScalarNode {
		return argValue{}, fmt.Errorf("want a value of type %s", a.Type)
	}
	v := argValue{Scalar: n.Value}
	if _, err := encodeArg(a, v.Scalar); err != nil {
		return argValue{}, err
	}
	return v, nil
}

func keyNames(keys []*keyspec.Key) string {
	var names []string
	for _, k := range keys {
		names = append(names, k.Name)
	}
	return strings.Join(names, ", ")
}

// Complete returns an error naming every live key of the file's instance that
// has no entry: a complete file accounts for every one (count: 0 for a key
// not used). A benchmark sizing one family alone does not call it.
func (f *File) Complete(spec *keyspec.Spec) error {
	have := map[*keyspec.Key]bool{}
	for _, e := range f.Entries {
		have[e.Key] = true
	}
	var errs List
	for _, k := range spec.KeysOf(f.Instance) {
		if !have[k] {
			errs = append(errs, &Error{File: f.Name, Line: max(f.KeysLine, 1), Entry: fmt.Sprintf("key %q", k.Name),
				Msg: fmt.Sprintf("a key of %s (%s:%d) has no entry: give its count or rate (count: 0 when unused)", f.Instance.Name, k.File, k.Line)})
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// LiveKeys is the entry's number of live keys: its count, or rate x lifetime
// rounded up.
func (e *Entry) LiveKeys() int64 {
	if e.Rate > 0 {
		return int64(math.Ceil(e.Rate * e.Lifetime.Seconds()))
	}
	return e.Count
}

// parseRate reads "120/s", "5/m", "3/h", "200000/24h" or "1000/7d" as keys per second.
func parseRate(s string) (float64, error) {
	n, per, ok := strings.Cut(s, "/")
	v, err := strconv.ParseFloat(strings.TrimSpace(n), 64)
	if !ok || err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("rate %q: want N/unit: 120/s, 5/m, 3/h, 200000/24h, 1000/7d", s)
	}
	per = strings.TrimSpace(per)
	units := map[string]time.Duration{"s": time.Second, "m": time.Minute, "h": time.Hour, "d": 24 * time.Hour}
	d, ok := units[per]
	if !ok {
		if d, err = keyspec.ParseDuration(per); err != nil || d <= 0 {
			return 0, fmt.Errorf("rate %q: want N/unit: 120/s, 5/m, 3/h, 200000/24h, 1000/7d", s)
		}
	}
	return v / d.Seconds(), nil
}

// ParseBytes reads a size the way redis.conf does: 1024, 1k (1000), 1kb
// (1024), 1m, 1mb, 1g, 1gb.
func ParseBytes(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"k", 1e3}, {"m", 1e6}, {"g", 1e9}, {"b", 1}} {
		if rest, ok := strings.CutSuffix(t, u.suffix); ok {
			t, mult = rest, u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("size %q: want a number of bytes, or k, kb, m, mb, g, gb", s)
	}
	return n * mult, nil
}
