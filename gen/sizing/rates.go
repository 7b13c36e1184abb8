package sizing

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/hanchat/luagen/gen/keyspec"
	"go.yaml.in/yaml/v3"
)

// The raw types of the rates: section (see rawFile).
type rawRate struct {
	Source   string               `yaml:"source"`
	Rate     string               `yaml:"rate"`
	Key      string               `yaml:"key"`
	Keys     map[string]string    `yaml:"keys"`
	Args     map[string]yaml.Node `yaml:"args"`
	Branches []rawBranch          `yaml:"branches"`
}

type rawBranch struct {
	Name  string               `yaml:"name"`
	Share string               `yaml:"share"`
	Fresh bool                 `yaml:"fresh"`
	Args  map[string]yaml.Node `yaml:"args"`
}

// DefaultUtilisation is the share of a shard's one thread the rates may use
// when the file declares none: 70%, headroom for bursts, replication, AOF
// rewrites and the commands that are not scripts.
const DefaultUtilisation = 0.70

// Rate is one script's declared peak call rate and how to make its calls: on
// the sample keys of a key entry of the file (the population its calls meet),
// in branches of declared shares (allowed and denied, hits and misses).
type Rate struct {
	Line   int
	Script *keyspec.Script
	Source string
	// PerSecond is the declared peak, in calls per second; RateText as written.
	PerSecond float64
	RateText  string
	// Entry is the key entry whose sample keys the calls run on: each measured
	// call meets a key of its own, made by the entry's steps.
	Entry    *Entry
	Branches []*Branch
}

// Branch is one kind of call of a rated script and its share of the calls.
type Branch struct {
	Line  int
	Name  string
	Share float64 // 0..1; a rate's branches add up to 1
	// Fresh: the call meets keys nobody made (a cache miss, a first request),
	// not the entry's sample keys.
	Fresh bool
	// Step is the call: the script, the key of each KEYS position and the
	// arguments (the entry's step's, then the rate's, then the branch's).
	Step *Step
}

// parseRates parses the rates: section and the utilisation, after the keys.
func (p *parser) rates(raw *rawFile, spec *keyspec.Spec, f *File) {
	f.Utilisation = DefaultUtilisation
	if raw.Utilisation != "" {
		u, err := parsePercent(raw.Utilisation)
		switch {
		case err != nil:
			p.errf("utilisation", "", "utilisation %q: want a percentage such as 70%%", raw.Utilisation)
		case u <= 0 || u > 1:
			p.errf("utilisation", "", "utilisation %s: want more than 0%% and at most 100%% of a shard's thread", raw.Utilisation)
		default:
			f.Utilisation = u
		}
	}
	f.RatesLine = p.lines.Line("rates")
	for _, name := range slices.Sorted(maps.Keys(raw.Rates)) {
		if r := p.rate("rates."+name, name, raw.Rates[name], spec, f); r != nil {
			f.Rates = append(f.Rates, r)
		}
	}
}

func (p *parser) rate(path, name string, r rawRate, spec *keyspec.Spec, f *File) *Rate {
	entry := fmt.Sprintf("rate %q", name)
	in := f.Instance
	s := spec.Script(name)
	if s == nil || s.Instance != in || !s.Live() {
		p.errf(path, entry, "not a live script of instance %s in %s", in.Name, spec.File)
		return nil
	}
	rt := &Rate{Line: p.lines.Line(path), Script: s, Source: r.Source, RateText: r.Rate}
	switch v, err := parseCallRate(r.Rate); {
	case r.Rate == "":
		p.errf(path, entry, "rate is missing: the peak calls per second (200000/s, 5000/m)")
	case err != nil:
		p.errf(path+".rate", entry, "%v", err)
	default:
		rt.PerSecond = v
	}
	e := p.rateEntry(path, entry, r.Key, s, f)
	if e == nil {
		return nil
	}
	rt.Entry = e
	// The entry's own step calling the script gives the default arguments.
	base := map[string]argValue{}
	for _, st := range e.Steps {
		if st.Script == s {
			for k, v := range st.Args {
				base[k] = v
			}
		}
	}
	rs := rawStep{Script: name, Keys: r.Keys, Args: r.Args}
	st := p.step(path, entry, rs, spec, in, e.Key, true)
	if st == nil {
		return nil
	}
	for k, v := range st.Args {
		base[k] = v
	}
	st.Args = base
	have := map[string]bool{}
	for _, prm := range e.Key.Pattern.Params() {
		have[prm.Name] = true
	}
	for pn := range e.Params {
		have[pn] = true
	}
	for _, est := range e.Steps {
		for _, k := range est.Keys {
			for _, prm := range k.Pattern.Params() {
				have[prm.Name] = true
			}
		}
	}
	p.resolveKeys(path, entry, st, e.Key, have)
	raws := r.Branches
	if len(raws) == 0 {
		raws = []rawBranch{{Name: "all", Share: "100%"}}
	}
	total, sharesOK := 0.0, true
	names := map[string]bool{}
	for i, rb := range raws {
		bp := fmt.Sprintf("%s.branches[%d]", path, i)
		b := &Branch{Line: p.lines.Line(bp), Name: rb.Name, Fresh: rb.Fresh}
		if len(r.Branches) == 0 {
			b.Line = rt.Line
		}
		bentry := fmt.Sprintf("%s branch %q", entry, rb.Name)
		switch {
		case rb.Name == "":
			p.errf(bp, entry, "a branch needs a name (allowed, denied, hit, miss)")
		case names[rb.Name]:
			p.errf(bp+".name", entry, "branch %q is named twice", rb.Name)
		}
		names[rb.Name] = true
		share, err := parsePercent(rb.Share)
		switch {
		case rb.Share == "":
			p.errf(bp, bentry, "share is missing: the branch's share of the calls (90%%)")
			sharesOK = false
		case err != nil:
			p.errf(bp+".share", bentry, "share %q: want a percentage such as 90%%", rb.Share)
			sharesOK = false
		case share < 0 || share > 1:
			p.errf(bp+".share", bentry, "share %s: want 0%%..100%%", rb.Share)
			sharesOK = false
		default:
			b.Share = share
			total += share
		}
		bst := &Step{Line: b.Line, Script: s, Keys: st.Keys, Args: map[string]argValue{}}
		for k, v := range st.Args {
			bst.Args[k] = v
		}
		if over := p.argsOf(bp, bentry, s, rb.Args); over != nil {
			for k, v := range over {
				bst.Args[k] = v
			}
		}
		p.checkArgs(bp, bentry, bst, have)
		b.Step = bst
		rt.Branches = append(rt.Branches, b)
	}
	if len(r.Branches) > 0 && sharesOK && math.Abs(total-1) > 1e-6 {
		p.errf(path+".branches", entry, "the branches' shares add up to %s, not 100%%", formatPercent(total))
	}
	return rt
}

// rateEntry is the key entry whose samples a rated script's calls meet: the
// one named, else the only entry that calls the script in its steps, else the
// only entry whose key the script takes.
func (p *parser) rateEntry(path, entry, key string, s *keyspec.Script, f *File) *Entry {
	if key != "" {
		for _, e := range f.Entries {
			if e.Key.Name == key {
				if !takes(s, e.Key) {
					p.errf(path+".key", entry, "script %s takes no key %s in its KEYS", s.Name, key)
					return nil
				}
				return e
			}
		}
		p.errf(path+".key", entry, "key %q has no entry under keys: (the calls run on its sample keys)", key)
		return nil
	}
	var calling, taking []*Entry
	for _, e := range f.Entries {
		for _, st := range e.Steps {
			if st.Script == s && !containsEntry(calling, e) {
				calling = append(calling, e)
			}
		}
		if takes(s, e.Key) {
			taking = append(taking, e)
		}
	}
	switch {
	case len(calling) == 1:
		return calling[0]
	case len(calling) == 0 && len(taking) == 1:
		return taking[0]
	}
	cands := calling
	if len(cands) == 0 {
		cands = taking
	}
	if len(cands) == 0 {
		p.errf(path, entry, "no entry under keys: holds a key script %s takes: add one, the calls run on its sample keys", s.Name)
		return nil
	}
	var names []string
	for _, e := range cands {
		names = append(names, e.Key.Name)
	}
	p.errf(path, entry, "the calls may run on the samples of %s: name one with key:", strings.Join(names, ", "))
	return nil
}

// argsOf parses a branch's argument overrides.
func (p *parser) argsOf(bp, entry string, s *keyspec.Script, raw map[string]yaml.Node) map[string]argValue {
	args := map[string]*keyspec.Arg{}
	for _, a := range s.Argv {
		args[a.Name] = a
	}
	out := map[string]argValue{}
	for _, an := range slices.Sorted(maps.Keys(raw)) {
		node := raw[an]
		ap := bp + ".args." + an
		a := args[an]
		switch {
		case a == nil:
			p.errf(ap, entry, "script %s has no ARGV %q", s.Name, an)
			continue
		case a.TTLOf != nil:
			p.errf(ap, entry, "ARGV %s of %s is the TTL of %s, which the wrapper sends: leave it out", an, s.Name, a.TTLOf.Name)
			continue
		}
		v, err := argNode(a, &node)
		if err != nil {
			p.errf(ap, entry, "ARGV %s of %s: %v", an, s.Name, err)
			continue
		}
		v.Line = node.Line
		out[an] = v
	}
	return out
}

func takes(s *keyspec.Script, k *keyspec.Key) bool {
	for _, pos := range s.Keys {
		if slices.Contains(pos.OneOf, k) {
			return true
		}
	}
	return false
}

func containsEntry(es []*Entry, e *Entry) bool {
	for _, x := range es {
		if x == e {
			return true
		}
	}
	return false
}

// parseCallRate reads a call rate, "200000/s" or "5000/m", in calls per
// second; a negative one is refused by name.
func parseCallRate(s string) (float64, error) {
	if n, _, ok := strings.Cut(s, "/"); ok {
		if v, err := strconv.ParseFloat(strings.TrimSpace(n), 64); err == nil && v < 0 {
			return 0, fmt.Errorf("rate %q: a rate cannot be negative", s)
		}
	}
	v, err := parseRate(s)
	if err != nil {
		return 0, fmt.Errorf("rate %q: want calls per unit: 200000/s, 5000/m, 3/h", s)
	}
	return v, nil
}

// parsePercent reads "70%" (or "12.5%") as 0.70.
func parsePercent(s string) (float64, error) {
	n, ok := strings.CutSuffix(strings.TrimSpace(s), "%")
	if !ok {
		return 0, fmt.Errorf("%q: want a percentage", s)
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(n), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q: want a percentage", s)
	}
	return v / 100, nil
}

func formatPercent(v float64) string {
	return strconv.FormatFloat(100*v, 'f', -1, 64) + "%"
}

// scriptsOfRates are the rated scripts, each once, by name.
func (f *File) scriptsOfRates() []*keyspec.Script {
	var out []*keyspec.Script
	for _, r := range f.Rates {
		out = append(out, r.Script)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
