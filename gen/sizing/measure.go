package sizing

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hanchat/luagen/gen/compiler"
	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/redis/go-redis/v9"
)

// Options are how Measure runs.
type Options struct {
	// RedisServer is the redis-server binary of the scratch server; "" finds
	// redis-server on PATH.
	RedisServer string
	// RateCalls is how many calls of each branch of a rated script are
	// measured (default DefaultRateCalls).
	RateCalls int
}

// scratchMaxmemory is the scratch server's maxmemory: never reached, but set so
// that an LRU or LFU policy encodes small integers as production does (Redis
// shares integer objects only without such a policy).
const scratchMaxmemory = "64gb"

// Measure creates f.Samples representative keys of every entry of f on a
// scratch redis-server, through the instance's scripts (srcs, from
// compiler.Load), measures them and returns the report.
func Measure(ctx context.Context, spec *keyspec.Spec, srcs map[string]*compiler.Source, f *File, o Options) (*Report, error) {
	m, stop, err := newMeasurer(ctx, spec, srcs, f, o)
	if err != nil {
		return nil, err
	}
	defer stop()
	return m.run(ctx)
}

// newMeasurer starts the scratch server and the measurer on it; stop closes
// the measurer's clients (a no-op when run closed them before measuring the
// empty server) and the admin client, and stops the server.
func newMeasurer(ctx context.Context, spec *keyspec.Spec, srcs map[string]*compiler.Source, f *File, o Options) (m *measurer, stop func(), err error) {
	s, err := startScratch(ctx, o.RedisServer)
	if err != nil {
		return nil, nil, err
	}
	admin := redis.NewClient(&redis.Options{Addr: s.addr, MaxRetries: -1, PoolSize: 1, ReadTimeout: time.Minute})
	m = &measurer{spec: spec, srcs: srcs, f: f, addr: s.addr, admin: admin, clients: map[int]*redis.Client{}, texts: map[int]string{},
		rateCalls: o.RateCalls}
	if m.rateCalls <= 0 {
		m.rateCalls = DefaultRateCalls
	}
	return m, func() {
		m.close()
		admin.Close()
		s.stop()
	}, nil
}

type measurer struct {
	entryAlloc int64
	spec       *keyspec.Spec
	srcs       map[string]*compiler.Source
	f          *File
	addr       string
	admin      *redis.Client
	clients    map[int]*redis.Client // by database index
	texts      map[int]string        // random text by size, shared by samples
	rateCalls  int
}

func (m *measurer) close() {
	for db, c := range m.clients {
		_ = c.Close()
		delete(m.clients, db)
	}
}

func (m *measurer) client(db int) *redis.Client {
	if c := m.clients[db]; c != nil {
		return c
	}
	c := redis.NewClient(&redis.Options{Addr: m.addr, DB: db, MaxRetries: -1, PoolSize: 1, ReadTimeout: time.Minute})
	m.clients[db] = c
	return c
}

func (m *measurer) run(ctx context.Context) (*Report, error) {
	version, err := m.info(ctx, "server", "redis_version")
	if err != nil {
		return nil, err
	}
	if m.entryAlloc, err = m.probeEntryAlloc(ctx); err != nil {
		return nil, err
	}
	if err := m.loadScripts(ctx, append(m.scripts(), m.f.scriptsOfRates()...)); err != nil {
		return nil, err
	}
	r := &Report{File: m.f.Name, Instance: m.f.Instance.Name, RedisVersion: version, Samples: m.f.Samples,
		EntryAllocBytes: m.entryAlloc, Fragmentation: m.f.Fragmentation, Growth: m.f.Growth,
		ShardMaxmemoryBytes: m.f.ShardMaxmemory, Fixed: m.f.Fixed, Utilisation: m.f.Utilisation}
	for _, e := range m.f.Entries {
		er, err := m.entry(ctx, e)
		if err != nil {
			return nil, err
		}
		r.Entries = append(r.Entries, er)
	}
	if len(m.f.Rates) > 0 {
		r.RateCalls = m.rateCalls
		if r.Rates, err = m.measureRates(ctx, m.rateCalls); err != nil {
			return nil, err
		}
	}
	// The empty server is measured last, its scripts loaded and run: what
	// running them keeps (the scripting client's buffers) is part of it; the
	// connections that sent the calls are closed first, as a service's
	// connections are no key's.
	m.close()
	if err := m.admin.FlushAll(ctx).Err(); err != nil {
		return nil, err
	}
	if r.BaselineBytes, err = m.usedMemory(ctx); err != nil {
		return nil, err
	}
	r.compute(m.f)
	return r, nil
}

// scripts are the scripts the entries' steps call, each once.
func (m *measurer) scripts() []*keyspec.Script {
	seen := map[*keyspec.Script]bool{}
	var out []*keyspec.Script
	for _, e := range m.f.Entries {
		for _, st := range e.Steps {
			if !seen[st.Script] {
				seen[st.Script] = true
				out = append(out, st.Script)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (m *measurer) info(ctx context.Context, section, field string) (string, error) {
	info, err := m.admin.Info(ctx, section).Result()
	if err != nil {
		return "", fmt.Errorf("sizing: INFO %s: %w", section, err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v, nil
		}
	}
	return "", fmt.Errorf("sizing: INFO %s has no %s", section, field)
}

func (m *measurer) usedMemory(ctx context.Context) (int64, error) {
	v, err := m.info(ctx, "memory", "used_memory")
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(v, 10, 64)
}

// entryAlloc is what the allocator really gives a dictionary entry (24 bytes
// asked): MEMORY USAGE counts sizeof(dictEntry), the allocator rounds it up to
// its size class, 24 with an 8-byte quantum (Redis's bundled jemalloc) or 32
// with a 16-byte one (a system jemalloc). A 16-character key's SDS asks 20
// bytes and falls in the same class as 24.
func (m *measurer) probeEntryAlloc(ctx context.Context) (int64, error) {
	const probe = "luagen:sizing:k1"
	if err := m.admin.Set(ctx, probe, "1", 0).Err(); err != nil {
		return 0, fmt.Errorf("sizing: probe: %w", err)
	}
	usage, err := m.admin.MemoryUsage(ctx, probe, 0).Result()
	if err != nil {
		return 0, fmt.Errorf("sizing: probe: %w", err)
	}
	// usage = robj (16, an integer encoding) + the key's SDS allocation + sizeof(dictEntry) (24).
	keyAlloc := usage - 16 - 24
	if keyAlloc != 24 && keyAlloc != 32 {
		return 0, fmt.Errorf("sizing: probe key of 20 bytes measured as %d bytes: an allocator this model does not know", keyAlloc)
	}
	return keyAlloc, m.admin.Del(ctx, probe).Err()
}

// sample is one representative key of an entry: its placeholder values.
type sample struct {
	values map[string]string
	key    string
}

func (m *measurer) entry(ctx context.Context, e *Entry) (EntryReport, error) {
	er := EntryReport{Key: e.Key.Name, Pattern: e.Key.Pattern.Raw, DB: e.Key.DB.ID(), Server: e.Key.DB.ServerOf().Name, Line: e.Line,
		LiveKeys: e.LiveKeys(), Calls: e.Calls}
	if e.Rate > 0 {
		er.LiveFrom = fmt.Sprintf("%s x %s", e.RateText, e.LifetimeText)
	} else {
		er.LiveFrom = "count"
	}
	if err := m.reset(ctx, e.Key.DB.ServerOf()); err != nil {
		return er, err
	}
	c := m.client(e.Key.DB.Index)
	samples := make([]*sample, m.f.Samples)
	for i := range samples {
		s, err := m.newSample(e)
		if err != nil {
			return er, fmt.Errorf("%s:%d: key %q: %w", m.f.Name, e.Line, e.Key.Name, err)
		}
		samples[i] = s
	}
	// The calls, in order, pipelined.
	type sent struct {
		cmd  *redis.Cmd
		step *Step
	}
	var batch []sent
	pipe := c.Pipeline()
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		_, _ = pipe.Exec(ctx)
		for _, s := range batch {
			if err := s.cmd.Err(); err != nil && err != redis.Nil {
				return fmt.Errorf("%s:%d: key %q: step %s answered: %w", m.f.Name, s.step.Line, e.Key.Name, s.step.Script.Name, err)
			}
		}
		batch = batch[:0]
		return nil
	}
	for _, s := range samples {
		for call := 0; call < e.Calls; call++ {
			if call > 0 {
				m.vary(e, s)
			}
			auto := map[string]string{}
			for _, st := range e.Steps {
				keys, args, err := m.callOf(e, st, s, auto)
				if err != nil {
					return er, fmt.Errorf("%s:%d: key %q: step %s: %w", m.f.Name, st.Line, e.Key.Name, st.Script.Name, err)
				}
				sha := m.srcs[st.Script.ID].SHA1
				batch = append(batch, sent{cmd: pipe.EvalSha(ctx, sha, keys, args...), step: st})
				if len(batch) >= 500 {
					if err := flush(); err != nil {
						return er, err
					}
				}
			}
		}
	}
	if err := flush(); err != nil {
		return er, err
	}
	return m.measureKeys(ctx, c, e, samples, er)
}

// measureKeys reads MEMORY USAGE, the encoding and the expiry of each distinct
// sample key.
func (m *measurer) measureKeys(ctx context.Context, c *redis.Client, e *Entry, samples []*sample, er EntryReport) (EntryReport, error) {
	seen := map[string]bool{}
	var keys []string
	for _, s := range samples {
		if !seen[s.key] {
			seen[s.key] = true
			keys = append(keys, s.key)
		}
	}
	pipe := c.Pipeline()
	usages := make([]*redis.IntCmd, len(keys))
	encs := make([]*redis.StringCmd, len(keys))
	ttls := make([]*redis.DurationCmd, len(keys))
	for i, k := range keys {
		usages[i] = pipe.MemoryUsage(ctx, k, 0)
		encs[i] = pipe.ObjectEncoding(ctx, k)
		ttls[i] = pipe.PTTL(ctx, k)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return er, fmt.Errorf("sizing: measuring %s: %w", e.Key.Name, err)
	}
	var total int64
	encodings := map[string]int{}
	expiring := 0
	var dictKeys []string // keys whose elements sit in a dictionary
	for i := range keys {
		u, err := usages[i].Result()
		if err != nil {
			return er, fmt.Errorf("%s:%d: key %q: the steps left no key %s (MEMORY USAGE: %v)", m.f.Name, e.Line, e.Key.Name, keys[i], err)
		}
		total += u
		enc := encs[i].Val()
		encodings[enc]++
		if enc == "hashtable" || enc == "skiplist" {
			dictKeys = append(dictKeys, keys[i])
		}
		if ttls[i].Val() > 0 {
			expiring++
		}
	}
	elements, err := m.elements(ctx, c, dictKeys)
	if err != nil {
		return er, err
	}
	// MEMORY USAGE counts a dictionary's entries and the dict itself at their
	// size, not at the allocator's: on an allocator of 16-byte steps an entry
	// (24) takes 32 and a dict (56) takes 64.
	if round := m.entryAlloc - 24; round > 0 {
		er.ElementOverheadBytes = float64(elements*round+int64(len(dictKeys))*round) / float64(len(keys))
	}
	er.Sampled = len(keys)
	er.UsageBytes = float64(total) / float64(len(keys))
	er.Expires = expiring*2 > len(keys)
	var names []string
	for enc := range encodings {
		names = append(names, enc)
	}
	sort.Strings(names)
	er.Encoding = strings.Join(names, ", ")
	return er, nil
}

// elements is how many elements the keys hold in all (fields, members).
func (m *measurer) elements(ctx context.Context, c *redis.Client, keys []string) (int64, error) {
	if len(keys) == 0 {
		return 0, nil
	}
	pipe := c.Pipeline()
	types := make([]*redis.StatusCmd, len(keys))
	for i, k := range keys {
		types[i] = pipe.Type(ctx, k)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, fmt.Errorf("sizing: TYPE: %w", err)
	}
	counts := make([]*redis.IntCmd, len(keys))
	for i, k := range keys {
		switch types[i].Val() {
		case "hash":
			counts[i] = pipe.HLen(ctx, k)
		case "set":
			counts[i] = pipe.SCard(ctx, k)
		case "zset":
			counts[i] = pipe.ZCard(ctx, k)
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, fmt.Errorf("sizing: element counts: %w", err)
	}
	var n int64
	for _, c := range counts {
		if c != nil {
			n += c.Val()
		}
	}
	return n, nil
}

// newSample picks the placeholder values of one representative key: the
// file's params, random values for the rest (of the entry's key, of the keys
// its steps take and of those the extra steps take).
func (m *measurer) newSample(e *Entry, extra ...*Step) (*sample, error) {
	s := &sample{values: map[string]string{}}
	for k, v := range e.Params {
		s.values[k] = v
	}
	fill := func(k *keyspec.Key) {
		for _, prm := range k.Pattern.Params() {
			if _, ok := s.values[prm.Name]; !ok {
				s.values[prm.Name] = randomValue(prm)
			}
		}
	}
	fill(e.Key)
	for _, st := range append(e.Steps[:len(e.Steps):len(e.Steps)], extra...) {
		for _, k := range st.Keys {
			fill(k)
		}
	}
	key, err := buildKey(m.f.Prefix, e.Key, s.values)
	if err != nil {
		return nil, err
	}
	s.key = key
	return s, nil
}

// vary gives the entry's vary placeholders new values for the next call.
func (m *measurer) vary(e *Entry, s *sample) {
	for _, name := range e.Vary {
		if prm := paramNamed(e, name); prm != nil {
			s.values[name] = randomValue(prm)
		}
	}
}

func paramNamed(e *Entry, name string) *keyspec.Param {
	keys := []*keyspec.Key{e.Key}
	for _, st := range e.Steps {
		for _, k := range st.Keys {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		for _, prm := range k.Pattern.Params() {
			if prm.Name == name {
				return prm
			}
		}
	}
	return nil
}

// callOf is the KEYS and ARGV of one step for one sample; auto holds the
// generated values of this call, shared by its steps (one owner token for a
// reserve and its complete).
func (m *measurer) callOf(e *Entry, st *Step, s *sample, auto map[string]string) ([]string, []any, error) {
	keys := make([]string, len(st.Script.Keys))
	for i, pos := range st.Script.Keys {
		k, err := buildKey(m.f.Prefix, st.Keys[pos.Name], s.values)
		if err != nil {
			return nil, nil, err
		}
		keys[i] = k
	}
	args := make([]any, len(st.Script.Argv))
	for i, a := range st.Script.Argv {
		v, err := m.argOf(st, a, s, auto)
		if err != nil {
			return nil, nil, fmt.Errorf("ARGV %s: %w", a.Name, err)
		}
		args[i] = v
	}
	return keys, args, nil
}

// argOf is one argument: the file's value, the key's TTL for ttl_of, the
// placeholder of the same name, empty for an optional one, or a generated
// token, hex string or UUID.
func (m *measurer) argOf(st *Step, a *keyspec.Arg, s *sample, auto map[string]string) (string, error) {
	if v, ok := st.Args[a.Name]; ok {
		if v.Size > 0 {
			return m.text(v.Size), nil
		}
		return encodeArg(a, v.Scalar)
	}
	switch {
	case a.TTLOf != nil:
		return strconv.FormatInt(a.TTLOf.TTL.Value.Milliseconds(), 10), nil
	case a.MaxLenOf != nil:
		return strconv.Itoa(a.MaxLenOf.MaxLen), nil
	case a.Unused != "":
		return "", nil // the wrapper sends "" for an unused argument
	case s.values[a.Name] != "":
		return encodeArg(a, s.values[a.Name])
	case a.Optional:
		return "", nil
	}
	if v, ok := auto[a.Name]; ok {
		return v, nil
	}
	if v, ok := autoArg(a); ok {
		auto[a.Name] = v
		return v, nil
	}
	return "", fmt.Errorf("no value for a %s: give it under args", a.Type)
}

func (m *measurer) text(n int) string {
	if t, ok := m.texts[n]; ok {
		return t
	}
	t := randomText(n)
	m.texts[n] = t
	return t
}

// buckets is the size of a dictionary's table holding n entries: the next
// power of two, at least 4 (Redis 7.0 grows a table when it is full).
func buckets(n int64) int64 {
	if n <= 4 {
		return 4
	}
	return 1 << (64 - bits.LeadingZeros64(uint64(n-1)))
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// shortDuration writes d without zero units: 24h, 1h30m, 62s, 1.5s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
