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
	ShardMaxmemoryBytes int64          `json:"shard_maxmemory_bytes"`
	Servers             []ServerReport `json:"servers"`
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
	// SeedEstimateBytes is Bytes x fragmentation x growth, the seeds' formula
	// for this pattern alone.
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
	// seeds' formula provisions (seed 000 §9, seed 004 §5).
	SeedEstimateBytes float64 `json:"seed_estimate_bytes"`
	// MaxmemoryBytes is DataBytes x growth, rounded up to a whole MiB: the
	// maxmemory to set (Redis counts used_memory against it; fragmentation
	// comes on top, in the RAM).
	MaxmemoryBytes int64 `json:"maxmemory_bytes"`
	// Shards is how many cluster shards of ShardMaxmemoryBytes hold MaxmemoryBytes.
	Shards int `json:"shards"`
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
	for _, name := range order {
		s := servers[name]
		s.SeedEstimateBytes = s.DataBytes * r.Fragmentation * r.Growth
		s.MaxmemoryBytes = int64(math.Ceil(s.DataBytes*r.Growth/(1<<20))) << 20
		s.Shards = int(math.Ceil(float64(s.MaxmemoryBytes) / float64(r.ShardMaxmemoryBytes)))
		if s.Shards < 1 {
			s.Shards = 1
		}
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
