package sizing

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hanchat/luagen/gen/compiler"
	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/redis/go-redis/v9"
)

// How the measurement of a rated script sends its calls: pipelines of
// PipelineDepth calls (redis-benchmark -P 16), from MeasureConns connections at
// once, as a loaded service's client does; a call meets a key of its own.
const (
	PipelineDepth = 16
	MeasureConns  = 32
	// DefaultRateCalls is how many calls of each branch of a rated script are
	// measured.
	DefaultRateCalls = 12000
	// RateRounds is how many runs of DefaultRateCalls calls each branch gets;
	// the report keeps the median.
	RateRounds = 3
)

// call is one EVALSHA, and the step it comes from (for errors); or, with
// raw set, another command (the population's filler).
type call struct {
	sha  string
	keys []string
	args []any
	step *Step
	raw  []any
}

// cpuSample is the server's main-thread CPU time and its commandstats for
// EVALSHA.
type cpuSample struct {
	cpu    float64 // seconds, user + system, main thread
	calls  int64   // cmdstat_evalsha calls
	usec   int64   // cmdstat_evalsha usec
	failed int64   // cmdstat_evalsha failed_calls (error replies)
}

func readCPU(ctx context.Context, admin *redis.Client) (cpuSample, error) {
	info, err := admin.Info(ctx, "cpu", "commandstats").Result()
	if err != nil {
		return cpuSample{}, fmt.Errorf("sizing: INFO cpu: %w", err)
	}
	var s cpuSample
	var user, sys float64
	seen := 0
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(line, "used_cpu_user_main_thread:"); ok {
			user, err = strconv.ParseFloat(v, 64)
			seen++
		} else if v, ok := strings.CutPrefix(line, "used_cpu_sys_main_thread:"); ok {
			sys, err = strconv.ParseFloat(v, 64)
			seen++
		} else if v, ok := strings.CutPrefix(line, "cmdstat_evalsha:"); ok {
			for _, kv := range strings.Split(v, ",") {
				k, val, _ := strings.Cut(kv, "=")
				n, _ := strconv.ParseFloat(val, 64)
				switch k {
				case "calls":
					s.calls = int64(n)
				case "usec":
					s.usec = int64(n)
				case "failed_calls":
					s.failed = int64(n)
				}
			}
		}
		if err != nil {
			return cpuSample{}, fmt.Errorf("sizing: INFO cpu: %q: %w", line, err)
		}
	}
	if seen != 2 {
		return cpuSample{}, fmt.Errorf("sizing: INFO cpu has no used_cpu_*_main_thread (redis-server 6.2 or later reports them)")
	}
	s.cpu = user + sys
	return s, nil
}

// execute sends groups of calls from conns connections, in pipelines of at
// least depth calls; the calls of one group go in order on one connection (a
// sample's steps). It returns the first error reply, with its step, after
// every call was answered.
func execute(ctx context.Context, addr string, db int, groups [][]call, conns, depth int) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, conns)
	for w := 0; w < conns; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			c := redis.NewClient(&redis.Options{Addr: addr, DB: db, PoolSize: 1, MaxRetries: -1,
				ReadTimeout: 2 * time.Minute, WriteTimeout: 2 * time.Minute})
			defer c.Close()
			pipe := c.Pipeline()
			var sent []call
			var cmds []*redis.Cmd
			flush := func() error {
				if len(cmds) == 0 {
					return nil
				}
				_, _ = pipe.Exec(ctx)
				var first error
				for i, cmd := range cmds {
					if err := cmd.Err(); err != nil && err != redis.Nil && first == nil {
						if sent[i].step == nil {
							first = fmt.Errorf("%v (the server must allow enable-debug-command local): %w", sent[i].raw[:2], err)
						} else {
							first = fmt.Errorf("step %s answered: %w", sent[i].step.Script.Name, err)
						}
					}
				}
				sent, cmds = sent[:0], cmds[:0]
				return first
			}
			for {
				i := int(next.Add(1)) - 1
				if i >= len(groups) {
					break
				}
				for _, cl := range groups[i] {
					sent = append(sent, cl)
					if cl.raw != nil {
						cmds = append(cmds, pipe.Do(ctx, cl.raw...))
						continue
					}
					cmds = append(cmds, pipe.EvalSha(ctx, cl.sha, cl.keys, cl.args...))
				}
				if len(cmds) >= depth {
					if err := flush(); err != nil && errs[w] == nil {
						errs[w] = err
					}
				}
			}
			if err := flush(); err != nil && errs[w] == nil {
				errs[w] = err
			}
		}(w)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return ctx.Err()
}

// prepared is the sample keys of one branch and each one's measured call.
type prepared struct {
	setup   [][]call // per sample: the entry's steps, calls times
	measure []call   // per sample: the branch's call
}

// prepare makes n samples for a branch of r: the entry's calls that create
// each sample key (none for a fresh branch) and the branch's call on it, which
// shares the generated values (an owner token) of the sample's last setup call.
func (m *measurer) prepare(r *Rate, b *Branch, n int) (*prepared, error) {
	e := r.Entry
	out := &prepared{}
	for i := 0; i < n; i++ {
		s, err := m.newSample(e, b.Step)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: rate %q: %w", m.f.Name, b.Line, r.Script.Name, err)
		}
		var setup []call
		auto := map[string]string{}
		if !b.Fresh {
			for c := 0; c < e.Calls; c++ {
				if c > 0 {
					m.vary(e, s)
				}
				auto = map[string]string{}
				for _, st := range e.Steps {
					cl, err := m.callFor(e, st, s, auto)
					if err != nil {
						return nil, fmt.Errorf("%s:%d: key %q: step %s: %w", m.f.Name, st.Line, e.Key.Name, st.Script.Name, err)
					}
					setup = append(setup, cl)
				}
			}
		}
		cl, err := m.callFor(e, b.Step, s, auto)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: rate %q branch %q: %w", m.f.Name, b.Line, r.Script.Name, b.Name, err)
		}
		out.setup = append(out.setup, setup)
		out.measure = append(out.measure, cl)
	}
	return out, nil
}

func (m *measurer) callFor(e *Entry, st *Step, s *sample, auto map[string]string) (call, error) {
	keys, args, err := m.callOf(e, st, s, auto)
	if err != nil {
		return call{}, err
	}
	return call{sha: m.srcs[st.Script.ID].SHA1, keys: keys, args: args, step: st}, nil
}

// branchRun is what one measured run of calls cost the server.
type branchRun struct {
	calls  int64
	usec   int64   // commandstats
	cpu    float64 // main-thread seconds
	wall   time.Duration
	failed int64
}

// runCalls sends calls (one group each) and reads what they cost.
func (m *measurer) runCalls(ctx context.Context, db int, calls []call, conns int) (branchRun, error) {
	if err := m.admin.ConfigResetStat(ctx).Err(); err != nil {
		return branchRun{}, fmt.Errorf("sizing: CONFIG RESETSTAT: %w", err)
	}
	before, err := readCPU(ctx, m.admin)
	if err != nil {
		return branchRun{}, err
	}
	wall, runErr := blast(ctx, m.addr, db, calls, conns, PipelineDepth)
	after, err := readCPU(ctx, m.admin)
	if err != nil {
		return branchRun{}, err
	}
	run := branchRun{calls: after.calls, usec: after.usec, cpu: after.cpu - before.cpu, wall: wall, failed: after.failed}
	return run, runErr
}

// measureRates measures the server CPU of each rated script's calls.
func (m *measurer) measureRates(ctx context.Context, n int) ([]RateReport, error) {
	var out []RateReport
	for _, r := range m.f.Rates {
		rr := RateReport{Script: r.Script.Name, Key: r.Entry.Key.Name, Server: r.Entry.Key.DB.ServerOf().Name, Line: r.Line,
			CallsPerSecond: r.PerSecond, Rate: r.RateText, Source: r.Source}
		for _, b := range r.Branches {
			if err := m.reset(ctx, r.Entry.Key.DB.ServerOf()); err != nil {
				return nil, err
			}
			p, err := m.prepare(r, b, n*RateRounds)
			if err != nil {
				return nil, err
			}
			db := r.Entry.Key.DB.Index
			if err := execute(ctx, m.addr, db, m.f.withPopulation(p.setup, r.Entry.Key.DB), MeasureConns, 500); err != nil {
				return nil, fmt.Errorf("%s:%d: key %q: making the samples of rate %q: %w", m.f.Name, r.Entry.Line, r.Entry.Key.Name, r.Script.Name, err)
			}
			// The least disturbed of RateRounds runs: on a shared machine a run
			// that other processes preempt costs more CPU (cold caches), never less.
			// Calls meet their keys in random order, as in production.
			rand.Shuffle(len(p.measure), func(i, j int) { p.measure[i], p.measure[j] = p.measure[j], p.measure[i] })
			// The median of RateRounds runs: on a shared machine a run that other
			// processes preempt costs more CPU (cold caches).
			var runs []branchRun
			for round := 0; round < RateRounds; round++ {
				run, err := m.runCalls(ctx, db, p.measure[round*n:(round+1)*n], MeasureConns)
				if err != nil {
					return nil, fmt.Errorf("%s:%d: rate %q branch %q: %w", m.f.Name, b.Line, r.Script.Name, b.Name, err)
				}
				if run.calls != int64(n) {
					return nil, fmt.Errorf("sizing: rate %q branch %q: commandstats counted %d EVALSHA, %d were sent", r.Script.Name, b.Name, run.calls, n)
				}
				runs = append(runs, run)
			}
			sort.Slice(runs, func(i, j int) bool { return runs[i].cpu < runs[j].cpu })
			mid := runs[len(runs)/2]
			br := BranchReport{Name: b.Name, Share: b.Share, Fresh: b.Fresh, Calls: n,
				UsecPerCall: float64(mid.usec) / float64(n), CPUUsecPerCall: 1e6 * mid.cpu / float64(n)}
			rr.Branches = append(rr.Branches, br)
			rr.UsecPerCall += b.Share * br.UsecPerCall
			rr.CPUUsecPerCall += b.Share * br.CPUUsecPerCall
		}
		out = append(out, rr)
	}
	return out, nil
}

// MaxPopulation caps the filler keys of the throughput measurement.
const MaxPopulation = 250000

// Population is how many keys the file declares for database db (every
// entry's live keys), at most MaxPopulation.
func (f *File) Population(db *keyspec.DB) int64 {
	var n int64
	for _, e := range f.Entries {
		if e.Key.DB == db {
			n += e.LiveKeys()
		}
	}
	return min(n, MaxPopulation)
}

// withPopulation puts the database's population in place among the
// samples' setup: filler strings (DEBUG POPULATE, in chunks between the
// samples), so the keyspace's table is as large as the file says and the
// samples lie spread among the filler in memory, not in the CPU's caches
// and TLB, as a key a call meets among millions does.
func (f *File) withPopulation(setup [][]call, d *keyspec.DB) [][]call {
	n := f.Population(d)
	if n == 0 || len(setup) == 0 {
		return setup
	}
	const chunks = 64
	per := (n + chunks - 1) / chunks
	out := make([][]call, 0, len(setup)+chunks)
	step := max(1, len(setup)/chunks)
	c := 0
	for i, g := range setup {
		out = append(out, g)
		if (i+1)%step == 0 && int64(c)*per < n {
			cnt := min(per, n-int64(c)*per)
			out = append(out, []call{{raw: []any{"DEBUG", "POPULATE", cnt, fmt.Sprintf("luagen:sizing:filler:%d", c), 64}}})
			c++
		}
	}
	for ; int64(c)*per < n; c++ {
		cnt := min(per, n-int64(c)*per)
		out = append(out, []call{{raw: []any{"DEBUG", "POPULATE", cnt, fmt.Sprintf("luagen:sizing:filler:%d", c), 64}}})
	}
	return out
}

// reset empties the scratch server and configures it as srv.
func (m *measurer) reset(ctx context.Context, srv *keyspec.Server) error {
	if err := m.admin.FlushAll(ctx).Err(); err != nil {
		return err
	}
	if err := m.admin.ConfigSet(ctx, "maxmemory-policy", orDefault(srv.EvictionPolicy, "noeviction")).Err(); err != nil {
		return fmt.Errorf("sizing: scratch CONFIG SET: %w", err)
	}
	if err := m.admin.ConfigSet(ctx, "maxmemory", scratchMaxmemory).Err(); err != nil {
		return fmt.Errorf("sizing: scratch CONFIG SET: %w", err)
	}
	return nil
}

// MeasureRates measures only the rated scripts of f on a scratch
// redis-server (what Measure's report holds under rates), with their
// capacities at f's utilisation.
func MeasureRates(ctx context.Context, spec *keyspec.Spec, srcs map[string]*compiler.Source, f *File, o Options) ([]RateReport, error) {
	m, stop, err := newMeasurer(ctx, spec, srcs, f, o)
	if err != nil {
		return nil, err
	}
	defer stop()
	if err := m.loadScripts(ctx, append(m.scripts(), f.scriptsOfRates()...)); err != nil {
		return nil, err
	}
	rates, err := m.measureRates(ctx, m.rateCalls)
	if err != nil {
		return nil, err
	}
	for i := range rates {
		rates[i].derive(f.Utilisation)
	}
	return rates, nil
}

// SaturateOptions are how Saturate loads a server.
type SaturateOptions struct {
	// Calls is how many calls are sent, each on a key of its own (default 100000).
	Calls int
	// Conns is how many connections send pipelines of PipelineDepth at once
	// (default 32).
	Conns int
}

// Saturation is what a server did under as many calls of a script as it could
// take.
type Saturation struct {
	Script string
	Calls  int64
	Wall   time.Duration
	// CallsPerSecond is Calls over Wall: the measured maximum.
	CallsPerSecond float64
	// ServerCPU is the CPU time of the server's main thread while the calls
	// ran; ServerCPU / Wall below 1 means the machine did not give it a whole core.
	ServerCPU time.Duration
}

// Saturate loads the server at addr (the caller's; it must accept SCRIPT
// LOAD, CONFIG RESETSTAT, INFO, DEBUG POPULATE and the scripts from its
// default user) with
// calls of rated script of f, made as Measure makes them (each branch in its
// share, each call on a sample key of its own made first), sent from many
// connections in pipelines, and reports the calls per second it served. The
// check of Measure's prediction: the benchmark compares the two.
func Saturate(ctx context.Context, addr string, spec *keyspec.Spec, srcs map[string]*compiler.Source, f *File, script string, o SaturateOptions) (*Saturation, error) {
	var r *Rate
	for _, x := range f.Rates {
		if x.Script.Name == script {
			r = x
		}
	}
	if r == nil {
		return nil, fmt.Errorf("sizing: %s has no rate for script %q", f.Name, script)
	}
	if o.Calls <= 0 {
		o.Calls = 100000
	}
	if o.Conns <= 0 {
		o.Conns = 32
	}
	admin := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, PoolSize: 1, ReadTimeout: time.Minute})
	defer admin.Close()
	m := &measurer{spec: spec, srcs: srcs, f: f, addr: addr, admin: admin, clients: map[int]*redis.Client{}, texts: map[int]string{}}
	defer m.close()
	if err := m.loadScripts(ctx, append(m.scripts(), r.Script)); err != nil {
		return nil, err
	}
	var setup [][]call
	var measured []call
	for _, b := range r.Branches {
		n := int(float64(o.Calls)*b.Share + 0.5)
		p, err := m.prepare(r, b, n)
		if err != nil {
			return nil, err
		}
		setup = append(setup, p.setup...)
		measured = append(measured, p.measure...)
	}
	rand.Shuffle(len(measured), func(i, j int) { measured[i], measured[j] = measured[j], measured[i] })
	db := r.Entry.Key.DB.Index
	rand.Shuffle(len(setup), func(i, j int) { setup[i], setup[j] = setup[j], setup[i] })
	if err := execute(ctx, addr, db, f.withPopulation(setup, r.Entry.Key.DB), o.Conns, 500); err != nil {
		return nil, fmt.Errorf("sizing: making the samples of %s: %w", script, err)
	}
	run, err := m.runCalls(ctx, db, measured, o.Conns)
	if err != nil {
		return nil, fmt.Errorf("sizing: saturating with %s: %w", script, err)
	}
	return &Saturation{Script: script, Calls: run.calls, Wall: run.wall, CallsPerSecond: float64(run.calls) / run.wall.Seconds(),
		ServerCPU: time.Duration(run.cpu * float64(time.Second))}, nil
}

// loadScripts SCRIPT LOADs each script's Lua.
func (m *measurer) loadScripts(ctx context.Context, scripts []*keyspec.Script) error {
	for _, st := range scripts {
		src := m.srcs[st.ID]
		if src == nil {
			return fmt.Errorf("sizing: script %s: no Lua loaded", st.Name)
		}
		if err := m.admin.ScriptLoad(ctx, string(src.Src)).Err(); err != nil {
			return fmt.Errorf("sizing: SCRIPT LOAD %s: %w", st.Name, err)
		}
	}
	return nil
}

// blast sends calls from conns raw connections, in pipelines of depth calls,
// encoded before the clock starts, so the client costs next to nothing beside
// the server (a Go client's own encoding and decoding would otherwise take
// much of a 2-core machine); it returns the wall time from the first write to
// the last reply and the first error reply.
func blast(ctx context.Context, addr string, db int, calls []call, conns, depth int) (time.Duration, error) {
	type conn struct {
		nc      net.Conn
		r       *bufio.Reader
		batches [][]byte
		counts  []int
	}
	cs := make([]*conn, conns)
	defer func() {
		for _, c := range cs {
			if c != nil {
				c.nc.Close()
			}
		}
	}()
	var d net.Dialer
	for i := range cs {
		nc, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return 0, fmt.Errorf("sizing: %w", err)
		}
		cs[i] = &conn{nc: nc, r: bufio.NewReaderSize(nc, 1<<16)}
		if db != 0 {
			if _, err := nc.Write(encodeCommand(nil, "SELECT", strconv.Itoa(db))); err != nil {
				return 0, err
			}
			if err := skipReply(cs[i].r); err != nil {
				return 0, fmt.Errorf("sizing: SELECT %d: %w", db, err)
			}
		}
	}
	// Calls are dealt to connections in pipelines of depth, round robin.
	for start, k := 0, 0; start < len(calls); start, k = start+depth, k+1 {
		c := cs[k%conns]
		end := min(start+depth, len(calls))
		var buf []byte
		for _, cl := range calls[start:end] {
			args := make([]string, 0, 3+len(cl.keys)+len(cl.args))
			args = append(args, "EVALSHA", cl.sha, strconv.Itoa(len(cl.keys)))
			args = append(args, cl.keys...)
			for _, a := range cl.args {
				args = append(args, fmt.Sprint(a))
			}
			buf = encodeCommand(buf, args...)
		}
		c.batches = append(c.batches, buf)
		c.counts = append(c.counts, end-start)
	}
	var wg sync.WaitGroup
	errs := make([]error, conns)
	startLine := make(chan struct{})
	for i, c := range cs {
		wg.Add(1)
		go func(i int, c *conn) {
			defer wg.Done()
			<-startLine
			for b, batch := range c.batches {
				if _, err := c.nc.Write(batch); err != nil {
					errs[i] = err
					return
				}
				for n := 0; n < c.counts[b]; n++ {
					if err := skipReply(c.r); err != nil {
						var re replyError
						if !errors.As(err, &re) {
							errs[i] = err
							return
						}
						if errs[i] == nil {
							errs[i] = err
						}
					}
				}
			}
		}(i, c)
	}
	begin := time.Now()
	close(startLine)
	wg.Wait()
	wall := time.Since(begin)
	for _, err := range errs {
		if err != nil {
			return wall, err
		}
	}
	return wall, nil
}

// encodeCommand appends a RESP array of bulk strings.
func encodeCommand(buf []byte, args ...string) []byte {
	buf = append(buf, '*')
	buf = strconv.AppendInt(buf, int64(len(args)), 10)
	buf = append(buf, '\r', '\n')
	for _, a := range args {
		buf = append(buf, '$')
		buf = strconv.AppendInt(buf, int64(len(a)), 10)
		buf = append(buf, '\r', '\n')
		buf = append(buf, a...)
		buf = append(buf, '\r', '\n')
	}
	return buf
}

// replyError is an error reply of the server.
type replyError string

func (e replyError) Error() string { return string(e) }

// skipReply reads one RESP2 reply; an error reply is a replyError.
func skipReply(r *bufio.Reader) error {
	line, err := r.ReadSlice('\n')
	if err != nil {
		return err
	}
	if len(line) < 3 {
		return fmt.Errorf("sizing: short reply %q", line)
	}
	body := line[1 : len(line)-2]
	switch line[0] {
	case '+', ':':
		return nil
	case '-':
		return replyError(string(body))
	case '$':
		n, err := strconv.Atoi(string(body))
		if err != nil {
			return fmt.Errorf("sizing: reply %q", line)
		}
		if n < 0 {
			return nil
		}
		_, err = r.Discard(n + 2)
		return err
	case '*':
		n, err := strconv.Atoi(string(body))
		if err != nil {
			return fmt.Errorf("sizing: reply %q", line)
		}
		var first error
		for i := 0; i < n; i++ {
			if err := skipReply(r); err != nil {
				var re replyError
				if !errors.As(err, &re) {
					return err
				}
				if first == nil {
					first = err
				}
			}
		}
		return first
	}
	return fmt.Errorf("sizing: reply %q", line)
}
