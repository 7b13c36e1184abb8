package runtime

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Script is one Lua script: its name in the spec, its source and the SHA1 Redis
// knows it by, computed once when the script is made.
type Script struct {
	name     string
	src      string
	sha      string
	readOnly bool
	function string // functions mode: the function FCALL calls (functions.go); "" for EVALSHA
	// replayable: a client may send the script again after a failure that
	// leaves its outcome unknown (read-only, or declared replay-safe).
	replayable bool
	// stringArgs: Input keeps keys and arguments as strings (StringArgs).
	stringArgs bool
	// cmdName and shaArg are EVALSHA (or EVALSHA_RO) and the SHA1, boxed once
	// for the commands Input builds.
	cmdName, shaArg any

	// loading holds the SCRIPT LOAD under way per client, so that callers who
	// meet NOSCRIPT together wait for one load instead of sending one each.
	mu      sync.Mutex
	loading map[any]*loadFlight
	reloads atomic.Uint64
}

// loadFlight is one SCRIPT LOAD under way; done closes when err is set.
type loadFlight struct {
	done chan struct{}
	err  error
}

// ScriptOption is a property of a script beyond its source.
type ScriptOption int

// ReplaySafe declares that running the script twice for one call does no harm
// (the spec's replay_safe): go-redis may send it again after a connection
// failure. Without it (and unless the script is read-only), a call is sent at
// most once: a failure after it was written is an ErrOutcomeUnknown.
const ReplaySafe ScriptOption = 1

// StringArgs makes the script's Input keep every key and argument as the
// string the command sends instead of boxing it for go-redis: what a backend
// that sends strings (runtime/rueidisbackend) takes without converting or
// allocating. luagen writes it for the scripts of an instance whose spec says
// client: rueidis; such a script still runs on go-redis (converted per call).
const StringArgs ScriptOption = 2

// NewScript makes a Script and checks that src hashes to sha1Hex (the constant the
// generator wrote), so a hand-edited source cannot run under a stale name.
// readOnly scripts run as EVALSHA_RO.
func NewScript(name, src, sha1Hex string, readOnly bool, opts ...ScriptOption) (*Script, error) {
	sum := sha1.Sum([]byte(src))
	if got := hex.EncodeToString(sum[:]); got != sha1Hex {
		return nil, fmt.Errorf("script %s: source hashes to %s, declared %s: %w (run luagen generate)", name, got, sha1Hex, ErrSHAMismatch)
	}
	s := &Script{name: name, src: src, sha: sha1Hex, readOnly: readOnly, replayable: readOnly, cmdName: "evalsha", shaArg: sha1Hex}
	for _, o := range opts {
		switch o {
		case ReplaySafe:
			s.replayable = true
		case StringArgs:
			s.stringArgs = true
		}
	}
	if readOnly {
		s.cmdName = "evalsha_ro"
	}
	return s, nil
}

// MustScript is NewScript for package initialisation of generated code; it panics
// on a SHA1 mismatch, which only a hand edit of generated code can cause.
func MustScript(name, src, sha1Hex string, readOnly bool, opts ...ScriptOption) *Script {
	s, err := NewScript(name, src, sha1Hex, readOnly, opts...)
	if err != nil {
		panic(err)
	}
	return s
}

// Name is the script's name in the spec.
func (s *Script) Name() string { return s.name }

// SHA1 is the hex SHA1 of the source.
func (s *Script) SHA1() string { return s.sha }

// Source is the Lua source.
func (s *Script) Source() string { return s.src }

// Replayable reports whether a client may send the script again after a
// failure that leaves its outcome unknown: read-only, or declared ReplaySafe.
func (s *Script) Replayable() bool { return s.replayable }

// Reloads is how many times a call of the script met NOSCRIPT and loaded it
// (callers that shared one load count once).
func (s *Script) Reloads() uint64 { return s.reloads.Load() }

// ReadOnly reports whether the script runs as EVALSHA_RO.
func (s *Script) ReadOnly() bool { return s.readOnly }

func (s *Script) evalSha(ctx context.Context, c redis.Scripter, keys []string, args []any) *redis.Cmd {
	if s.function != "" {
		return s.fcall(ctx, c, keys, args)
	}
	if s.readOnly {
		return c.EvalShaRO(ctx, s.sha, keys, args...)
	}
	return c.EvalSha(ctx, s.sha, keys, args...)
}

// Run calls the script with EVALSHA (EVALSHA_RO when read-only). On NOSCRIPT it
// loads the script with SCRIPT LOAD (which, unlike EVAL, is never evicted from the
// script cache) and retries once. The reply is what go-redis decodes: int64, string,
// []any, bool (RESP3) or nil for a nil reply. An error reply is a *ScriptError.
func (s *Script) Run(ctx context.Context, c redis.Scripter, keys []string, args ...any) (any, error) {
	v, err := s.evalSha(ctx, c, keys, args).Result()
	if isNoScript(err) && s.function == "" {
		if err := s.load(ctx, c); err != nil {
			return nil, err
		}
		v, err = s.evalSha(ctx, c, keys, args).Result()
	}
	if err == redis.Nil {
		return nil, nil
	}
	if err != nil {
		return nil, replyError(s.name, err)
	}
	return v, nil
}

// processor is a client that sends a command as it is: every go-redis client
// and pipeline.
type processor interface {
	Process(ctx context.Context, cmd redis.Cmder) error
}

// noRetry is a command go-redis must not send again after a failure (its
// retries, a pipeline's replay, an auto-pipeline's recovery all ask NoRetry).
type noRetry struct{ *redis.Cmd }

// NoRetry is true: the command is sent at most once.
func (noRetry) NoRetry() bool { return true }

// cmder is cmd as s may be sent: once only unless s is replayable.
func (s *Script) cmder(cmd *redis.Cmd) redis.Cmder {
	if s.replayable {
		return cmd
	}
	return noRetry{cmd}
}

// outcome classifies the error of a call that was handed to the client: a
// reply (an error reply, NOSCRIPT) or a failure before anything was written
// (a dial error, no free connection) is itself; anything else (a connection
// that died, a context that ended while waiting for the reply) leaves the
// outcome unknown.
func (s *Script) outcome(err error) error {
	if err == nil || err == redis.Nil {
		return err
	}
	return s.failure(err)
}

// failure is outcome for a non-nil error, apart so that the success path
// allocates nothing for errors.As's targets.
func (s *Script) failure(err error) error {
	var re redis.Error
	var op *net.OpError
	switch {
	case errors.As(err, &re):
		return err
	case errors.As(err, &op) && op.Op == "dial", errors.Is(err, redis.ErrPoolTimeout), errors.Is(err, redis.ErrClosed):
		return err
	case errors.Is(err, ErrOutcomeUnknown):
		return err
	}
	return &OutcomeUnknownError{Script: s.name, Err: err}
}

// send sends in's command on c: as built, through Do, where c has it; else
// through EvalSha.
func (s *Script) send(ctx context.Context, c redis.Scripter, in *Input) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, NotSent(s, err)
	}
	var v any
	var err error
	switch c := c.(type) {
	case *AutoPipelined:
		// Its Do runs outside the auto-pipeline; Process batches.
		cmd := redis.NewCmd(ctx, in.command()...)
		if err = c.process(ctx, s, s.cmder(cmd)); err == nil || !errors.Is(err, ErrOutcomeUnknown) {
			v, err = cmd.Result()
		}
	case processor:
		cmd := redis.NewCmd(ctx, in.command()...)
		_ = c.Process(ctx, s.cmder(cmd))
		v, err = cmd.Result()
	default:
		v, err = s.evalSha(ctx, c, in.keys(), in.args()).Result()
	}
	return v, s.outcome(err)
}

// noScriptLoads bounds how often one call loads its script after NOSCRIPT.
const noScriptLoads = 3

// RefusedRetries bounds how often a call of a script that is not replay-safe
// is sent again after the server refused it without running it (NotRun). Six
// resends wait 8+16+...+256 ms, about half a second: long enough for a slot
// that moves during a live reshard on a loaded machine (three, 56 ms in all,
// were seen to run out), and the call's ctx bounds it in any case.
const RefusedRetries = 6

// refusedCodes are the error replies by which a server refuses a command
// without running it: go-redis and rueidis retry them, but only for commands
// they may retry.
var refusedCodes = []string{"TRYAGAIN ", "LOADING ", "READONLY ", "MASTERDOWN ", "CLUSTERDOWN ", "NOREPLICAS ", "ERR max number of clients reached"}

// NotRun reports whether err is an error reply by which the server refused
// the call without running it (TRYAGAIN while a slot moves, LOADING,
// READONLY, MASTERDOWN, CLUSTERDOWN, NOREPLICAS, too many clients): sending
// it again cannot run it twice, whatever the script.
func NotRun(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	var se *ScriptError
	if errors.As(err, &se) {
		msg = se.Message
	}
	for _, c := range refusedCodes {
		if strings.HasPrefix(msg, c) {
			return true
		}
	}
	return false
}

// RetryWait waits before the attempt-th resend of a refused call: 8 ms,
// doubling up to 512 ms, or until ctx ends.
func RetryWait(ctx context.Context, attempt int) error {
	d := min(8*time.Millisecond<<attempt, 512*time.Millisecond)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// runInput is Run for a built Input.
func (s *Script) runInput(ctx context.Context, c redis.Scripter, in *Input) (any, error) {
	v, err := s.send(ctx, c, in)
	for loads, refusals := 0, 0; err != nil; {
		switch {
		case isNoScript(err) && loads < noScriptLoads:
			// NOSCRIPT means the call did not run: load and send again, a
			// few times (a SCRIPT FLUSH or failover may come between).
			loads++
			if err := s.load(ctx, c); err != nil {
				return nil, err
			}
		case !s.replayable && refusals < RefusedRetries && NotRun(err):
			// go-redis does not retry a NoRetry call, even when the server
			// refused it without running it (TRYAGAIN while a slot moves).
			if err := RetryWait(ctx, refusals); err != nil {
				return nil, NotSent(s, err)
			}
			refusals++
		default:
			return s.finish(v, err)
		}
		v, err = s.send(ctx, c, in)
	}
	return s.finish(v, err)
}

// finish turns a call's last reply or error into Run's.
func (s *Script) finish(v any, err error) (any, error) {
	if err != nil && errors.Is(err, ErrOutcomeUnknown) {
		return nil, err
	}
	if err == redis.Nil {
		return nil, nil
	}
	if err != nil {
		return nil, replyError(s.name, err)
	}
	return v, nil
}

// load loads the script where c's next EVALSHA may land, once at a time per
// client however many callers ask (LoadOnce).
func (s *Script) load(ctx context.Context, c redis.Scripter) error {
	if !reflect.TypeOf(c).Comparable() {
		return s.loadAll(ctx, c)
	}
	return s.LoadOnce(ctx, c, func(ctx context.Context) error { return s.loadAll(ctx, c) })
}

// LoadOnce runs load, the SCRIPT LOAD of s through the client named by key
// (comparable), once at a time however many callers meet NOSCRIPT there
// together: a caller that finds a load under way waits for it and shares its
// outcome (or loads itself when the load failed only because its first
// caller's context ended). Backends call it on NOSCRIPT.
func (s *Script) LoadOnce(ctx context.Context, key any, load func(context.Context) error) error {
	for {
		s.mu.Lock()
		f, waiting := s.loading[key]
		if !waiting {
			if s.loading == nil {
				s.loading = map[any]*loadFlight{}
			}
			f = &loadFlight{done: make(chan struct{})}
			s.loading[key] = f
		}
		s.mu.Unlock()
		if !waiting {
			s.reloads.Add(1)
			f.err = load(ctx)
			s.mu.Lock()
			delete(s.loading, key)
			s.mu.Unlock()
			close(f.done)
			return f.err
		}
		select {
		case <-f.done:
		case <-ctx.Done():
			return NotSent(s, ctx.Err())
		}
		if f.err == nil || !(errors.Is(f.err, context.Canceled) || errors.Is(f.err, context.DeadlineExceeded)) || ctx.Err() != nil {
			return f.err
		}
	}
}

// loadAll loads the script where c's next EVALSHA may land: on every shard of a
// Ring (whose SCRIPT LOAD, having no key, would reach one random shard), else
// through c (a ClusterClient's SCRIPT LOAD reaches every node).
func (s *Script) loadAll(ctx context.Context, c redis.Scripter) error {
	if s.function != "" {
		return fmt.Errorf("script %s: %w", s.name, ErrFunctionsMode)
	}
	if ring, ok := c.(*redis.Ring); ok {
		return ring.ForEachShard(ctx, func(ctx context.Context, shard *redis.Client) error { return s.loadOne(ctx, shard) })
	}
	return s.loadOne(ctx, c)
}

func (s *Script) loadOne(ctx context.Context, c redis.Scripter) error {
	sha, err := c.ScriptLoad(ctx, s.src).Result()
	if err != nil {
		return replyError(s.name, fmt.Errorf("SCRIPT LOAD: %w", err))
	}
	if sha != s.sha {
		return fmt.Errorf("script %s: SCRIPT LOAD answered %s, want %s: %w", s.name, sha, s.sha, ErrSHAMismatch)
	}
	return nil
}

// Preload loads every script with SCRIPT LOAD on every node that may run it: once
// on a single server, on every shard of a Ring, and on every node (primaries and
// replicas) of a cluster. Scripts loaded this way survive script-cache eviction.
func Preload(ctx context.Context, c redis.UniversalClient, scripts ...*Script) error {
	for _, s := range scripts {
		if err := s.loadAll(ctx, c); err != nil {
			return err
		}
	}
	return nil
}

// CheckDB reports ErrWrongDB when c is a client whose selected database is not db,
// and ErrUncheckedDB for a bare *redis.AutoPipeliner (which hides its client:
// wrap it with AutoPipeline). Other clients whose database cannot be read (a
// pipeline, a custom Scripter) pass.
func CheckDB(c redis.Scripter, db int) error {
	var got int
	switch c := c.(type) {
	case *AutoPipelined:
		return CheckDB(c.client, db)
	case *redis.AutoPipeliner:
		return fmt.Errorf("a *redis.AutoPipeliner hides its client's database: pass runtime.AutoPipeline(client, options) instead: %w", ErrUncheckedDB)
	case *redis.Client:
		got = c.Options().DB
	case *redis.Ring:
		got = c.Options().DB
	case *redis.ClusterClient:
		got = 0
	default:
		return nil
	}
	if got != db {
		return fmt.Errorf("client selects db %d, the scripts need db %d: %w", got, db, ErrWrongDB)
	}
	return nil
}
