package sizing

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
)

// Report is what Measure found and what it implies.
type Report struct {
	File         string `json:"file"`
	Instance     string `json:"instance"`
	RedisVersion string `json:"redis_version"`
	Samples      int    `json:"samples"`
	// BaselineBytes is used_memory of the empty scratch server with the
	// scripts loaded: what a server uses before any key.
	BaselineBytes int64 `json:"baseline_bytes"`
	// EntryAllocBytes is what the allocator gives one dictionary entry (24 or 32).
	EntryAllocBytes int64         `json:"entry_alloc_bytes"`
	Entries         []EntryReport `json:"keys"`
	Fixed           []Fixed       `json:"fixed"`
	Fragmentation   float64       `json:"fragmentation"`
	Growth          float64       `json:"growth"`
	// ShardMaxmemoryBytes is the maxmemory one cluster shard may have.
	ShardMaxmemoryBytes int64 `json:"shard_maxmemory_bytes"`
	// Utilisation is the share of a shard's thread the rates may use.
	Utilisation float64 `json:"utilisation"`
	// RateCalls is how many calls of each branch of a rated script were measured.
	RateCalls int            `json:"rate_calls,omitempty"`
	Rates     []RateReport   `json:"rates,omitempty"`
	Servers   []ServerReport `json:"servers"`
}

// RateReport is one rated script: what a call costs the server's thread and
// how many calls one shard serves.
type RateReport struct {
	Script string `json:"script"`
	Key    string `json:"key"`              // the entry whose sample keys the calls met
	Server string `json:"server,omitempty"` // "" for the instance's own server
	Line   int    `json:"-"`
	Source string `json:"source,omitempty"`
	// CallsPerSecond is the declared peak; Rate as the file writes it.
	CallsPerSecond float64        `json:"calls_per_second"`
	Rate           string         `json:"rate"`
	Branches       []BranchReport `json:"branches"`
	// UsecPerCall is INFO commandstats' usec_per_call of EVALSHA, weighted by
	// the branches' shares: the script's own run.
	UsecPerCall float64 `json:"usec_per_call"`
	// CPUUsecPerCall is the server main thread's CPU time per call, weighted
	// by the shares: the script's run and what the call costs around it
	// (reading and parsing the request, writing the reply, the event loop).
	// The capacities are counted from it.
	CPUUsecPerCall float64 `json:"cpu_usec_per_call"`
	// SaturationCallsPerSecond is 1e6 / CPUUsecPerCall: the calls per second
	// of one shard's thread fully busy.
	SaturationCallsPerSecond float64 `json:"saturation_calls_per_second"`
	// ShardCallsPerSecond is the calls per second one shard serves at the
	// utilisation ceiling.
	ShardCallsPerSecond float64 `json:"shard_calls_per_second"`
	// Threads is the declared rate's share of one thread: CallsPerSecond x
	// CPUUsecPerCall / 1e6.
	Threads float64 `json:"threads"`
}

// derive fills the capacities from the measured CPU per call.
func (rr *RateReport) derive(utilisation float64) {
	if rr.CPUUsecPerCall > 0 {
		rr.SaturationCallsPerSecond = 1e6 / rr.CPUUsecPerCall
		rr.ShardCallsPerSecond = utilisation * rr.SaturationCallsPerSecond
	}
	rr.Threads = rr.CallsPerSecond * rr.CPUUsecPerCall / 1e6
}

// BranchReport is one branch of a rated script.
type BranchReport struct {
	Name           string  `json:"name"`
	Share          float64 `json:"share"`
	Fresh          bool    `json:"fresh,omitempty"`
	Calls          int     `json:"calls"`
	UsecPerCall    float64 `json:"usec_per_call"`
	CPUUsecPerCall float64 `json:"cpu_usec_per_call"`
}

// EntryReport is one key pattern.
type EntryReport struct {
	Key      string `json:"key"`
	Pattern  string `json:"pattern"`
	DB       string `json:"db"`
	Server   string `json:"server,omitempty"` // "" for the instance's own server
	Line     int    `json:"-"`
	Calls    int    `json:"calls"`
	Sampled  int    `json:"sampled"`  // distinct keys measured
	Encoding string `json:"encoding"` // OBJECT ENCODING of the samples
	Expires  bool   `json:"expires"`  // the keys have a TTL
	// UsageBytes is the mean MEMORY USAGE of a sample key.
	UsageBytes float64 `json:"usage_bytes"`
	// ElementOverheadBytes is what the allocator adds to the entries and the
	// dict of a key whose elements sit in a dictionary (hashtable, skiplist
	// encodings), which MEMORY USAGE counts at their size.
	ElementOverheadBytes float64 `json:"element_overhead_bytes"`
	// OverheadBytes is what one key costs beyond MEMORY USAGE: its element
	// overhead, the allocator's rounding of its keyspace entry, its share of the
	// keyspace table's buckets, and with a TTL its expires entry and bucket share.
	OverheadBytes float64 `json:"overhead_bytes"`
	BytesPerKey   float64 `json:"bytes_per_key"`
	LiveKeys      int64   `json:"live_keys"`
	LiveFrom      string  `json:"live_from"` // "count" or "RATE x LIFETIME"
	Bytes         float64 `json:"bytes"`     // LiveKeys x BytesPerKey
	// SeedEstimateBytes is Bytes x fragmentation x growth, the provisioning
	// formula for this pattern alone.
	SeedEstimateBytes float64 `json:"seed_estimate_bytes"`
}

// ServerReport is the totals of one server (an instance that is not split
// has one, named "").
type ServerReport struct {
	Name     string `json:"name,omitempty"`
	LiveKeys int64  `json:"live_keys"`
	// DataBytes is the predicted used_memory: the empty server's, every
	// pattern's and every fixed entry's.
	DataBytes float64 `json:"data_bytes"`
	// SeedEstimateBytes is DataBytes x fragmentation x growth: the RAM the
	// usual formula provisions (DefaultFragmentation, DefaultGrowth).
	SeedEstimateBytes float64 `json:"seed_estimate_bytes"`
	// MaxmemoryBytes is DataBytes x growth, rounded up to a whole MiB: the
	// maxmemory to set (Redis counts used_memory against it; fragmentation
	// comes on top, in the RAM).
	MaxmemoryBytes int64 `json:"maxmemory_bytes"`
	// Shards is how many cluster shards of ShardMaxmemoryBytes hold MaxmemoryBytes.
	Shards int `json:"shards"`
	// Threads is the shards' threads the declared rates of the server's
	// scripts keep busy (the sum of their Threads); 0 without rates.
	Threads float64 `json:"threads,omitempty"`
	// ShardsForRates is how many shards serve the declared rates with each
	// thread at most at the utilisation ceiling: Threads / utilisation,
	// rounded up; 0 without rates.
	ShardsForRates int `json:"shards_for_rates,omitempty"`
	// ShardsNeeded is the larger of Shards and ShardsForRates.
	ShardsNeeded int `json:"shards_needed"`
}

// compute fills the overheads, the live bytes and the totals.
func (r *Report) compute(f *File) {
	type dbCount struct{ keys, expiring int64 }
	perDB := map[string]*dbCount{}
	for _, e := range r.Entries {
		c := perDB[e.DB]
		if c == nil {
			c = &dbCount{}
			perDB[e.DB] = c
		}
		c.keys += e.LiveKeys
		if e.Expires {
			c.expiring += e.LiveKeys
		}
	}
	servers := map[string]*ServerReport{}
	var order []string
	server := func(name string) *ServerReport {
		s := servers[name]
		if s == nil {
			s = &ServerReport{Name: name, DataBytes: float64(r.BaselineBytes)}
			servers[name] = s
			order = append(order, name)
		}
		return s
	}
	server("")
	for _, name := range f.Instance.ServerNames()[1:] {
		server(name)
	}
	for i := range r.Entries {
		e := &r.Entries[i]
		c := perDB[e.DB]
		e.OverheadBytes = e.ElementOverheadBytes + overhead(r.EntryAllocBytes, c.keys, c.expiring, e.Expires)
		e.BytesPerKey = e.UsageBytes + e.OverheadBytes
		e.Bytes = float64(e.LiveKeys) * e.BytesPerKey
		e.SeedEstimateBytes = e.Bytes * r.Fragmentation * r.Growth
		s := server(e.Server)
		s.LiveKeys += e.LiveKeys
		s.DataBytes += e.Bytes
	}
	// Fixed memory (Pub/Sub buffers) is the instance's own server's.
	for _, fx := range r.Fixed {
		server("").DataBytes += float64(fx.Bytes)
	}
	for i := range r.Rates {
		rr := &r.Rates[i]
		rr.derive(r.Utilisation)
		server(rr.Server).Threads += rr.Threads
	}
	for _, name := range order {
		s := servers[name]
		s.SeedEstimateBytes = s.DataBytes * r.Fragmentation * r.Growth
		s.MaxmemoryBytes = int64(math.Ceil(s.DataBytes*r.Growth/(1<<20))) << 20
		s.Shards = int(math.Ceil(float64(s.MaxmemoryBytes) / float64(r.ShardMaxmemoryBytes)))
		if s.Shards < 1 {
			s.Shards = 1
		}
		if len(r.Rates) > 0 {
			s.ShardsForRates = max(1, int(math.Ceil(s.Threads/r.Utilisation-1e-9)))
		}
		s.ShardsNeeded = max(s.Shards, s.ShardsForRates)
		r.Servers = append(r.Servers, *s)
	}
}

// overhead is what one key costs beyond its MEMORY USAGE, in a database of
// keys keys of which expiring have a TTL: the allocator's rounding of its
// keyspace entry (MEMORY USAGE counts sizeof, 24), its share of the keyspace
// table (8 bytes a bucket), and with a TTL its expires entry and its share of
// that table.
func overhead(entryAlloc, keys, expiring int64, expires bool) float64 {
	if keys == 0 {
		return 0
	}
	o := float64(entryAlloc-24) + 8*float64(buckets(keys))/float64(keys)
	if expires && expiring > 0 {
		o += float64(entryAlloc) + 8*float64(buckets(expiring))/float64(expiring)
	}
	return o
}

// JSON writes the report as indented JSON.
func (r *Report) JSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// Text writes the report as a table and its totals.
func (r *Report) Text(w io.Writer) error {
	fmt.Fprintf(w, "sizing of instance %s from %s: %d sample keys a pattern, measured on redis-server %s\n\n", r.Instance, r.File, r.Samples, r.RedisVersion)
	rows := [][]string{{"key", "encoding", "MEMORY USAGE", "+ dicts", "= bytes/key", "live keys", "from", "memory", "x1.5x1.3"}}
	for _, e := range r.Entries {
		name := e.Key
		if e.Server != "" {
			name += " [" + e.Server + "]"
		}
		rows = append(rows, []string{name, e.Encoding, fmt.Sprintf("%.0f", e.UsageBytes), fmt.Sprintf("%.0f", e.OverheadBytes),
			fmt.Sprintf("%.0f", e.BytesPerKey), count(e.LiveKeys), e.LiveFrom, human(e.Bytes), human(e.SeedEstimateBytes)})
	}
	table(w, rows, 2)
	for _, fx := range r.Fixed {
		fmt.Fprintf(w, "fixed: %s %s (%s)\n", fx.Name, human(float64(fx.Bytes)), fx.Source)
	}
	fmt.Fprintf(w, "empty server (used_memory with the scripts loaded): %s; a keyspace entry is %d bytes\n", human(float64(r.BaselineBytes)), r.EntryAllocBytes)
	if len(r.Rates) > 0 {
		fmt.Fprintf(w, "\nthroughput: %d calls a branch on sample keys of their own, pipelined %d deep from %d connections; a shard's thread at most %.0f%% busy\n\n",
			r.RateCalls, PipelineDepth, MeasureConns, 100*r.Utilisation)
		rows := [][]string{{"script", "on key", "branches", "µs/call", "CPU µs/call", "calls/s at 100%", fmt.Sprintf("calls/s at %.0f%%", 100*r.Utilisation), "declared", "threads"}}
		for _, rr := range r.Rates {
			name := rr.Script
			if rr.Server != "" {
				name += " [" + rr.Server + "]"
			}
			var bs []string
			for _, b := range rr.Branches {
				bs = append(bs, fmt.Sprintf("%s %.0f%% %.1f", b.Name, 100*b.Share, b.CPUUsecPerCall))
			}
			rows = append(rows, []string{name, rr.Key, strings.Join(bs, ", "), fmt.Sprintf("%.1f", rr.UsecPerCall), fmt.Sprintf("%.1f", rr.CPUUsecPerCall),
				count(int64(rr.SaturationCallsPerSecond)), count(int64(rr.ShardCallsPerSecond)), count(int64(rr.CallsPerSecond+0.5)) + "/s", fmt.Sprintf("%.2f", rr.Threads)})
		}
		table(w, rows, 3)
	}
	for _, s := range r.Servers {
		if len(r.Servers) > 1 {
			name := s.Name
			if name == "" {
				name = r.Instance + "'s own server"
			}
			fmt.Fprintf(w, "\nserver %s:\n", name)
		} else {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "  live keys              %s\n", count(s.LiveKeys))
		fmt.Fprintf(w, "  used_memory predicted  %s\n", human(s.DataBytes))
		fmt.Fprintf(w, "  seeds' estimate        %s = %s x %.1f fragmentation x %.1f growth (RAM to provision)\n", human(s.SeedEstimateBytes), human(s.DataBytes), r.Fragmentation, r.Growth)
		fmt.Fprintf(w, "  maxmemory              %s = %s x %.1f growth, rounded up (maxmemory %dmb)\n", human(float64(s.MaxmemoryBytes)), human(s.DataBytes), r.Growth, s.MaxmemoryBytes>>20)
		fmt.Fprintf(w, "  cluster shards         %d of maxmemory %s\n", s.Shards, human(float64(r.ShardMaxmemoryBytes)))
		if s.ShardsForRates > 0 {
			fmt.Fprintf(w, "  threads for the rates  %.2f of one shard's thread\n", s.Threads)
			fmt.Fprintf(w, "  shards for the rates   %d at %.0f%% of a thread each\n", s.ShardsForRates, 100*r.Utilisation)
			fmt.Fprintf(w, "  shards needed          %d (the larger of memory's and the rates')\n", s.ShardsNeeded)
		}
	}
	return nil
}

// table writes rows in columns: the first leftColumns left-aligned, the
// others right-aligned.
func table(w io.Writer, rows [][]string, leftColumns int) {
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], len(c))
		}
	}
	for _, r := range rows {
		var b strings.Builder
		for i, c := range r {
			if i > 0 {
				b.WriteString("  ")
			}
			pad := strings.Repeat(" ", widths[i]-len(c))
			if i < leftColumns {
				b.WriteString(c + pad)
			} else {
				b.WriteString(pad + c)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

// human is a byte count in B, KiB, MiB or GiB.
func human(b float64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.2f GiB", b/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", b/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", b/(1<<10))
	}
	return fmt.Sprintf("%.0f B", b)
}

// count writes n with thousands separators.
func count(n int64) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
