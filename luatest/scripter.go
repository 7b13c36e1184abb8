package luatest

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Scripter lets go-redis script callers, generated wrappers included, run on a
// Server unchanged: it implements redis.Scripter with a script cache of its own,
// answers NOSCRIPT for an unknown SHA1 the way Redis does, and keeps the Result of
// every run so a test can check what the scripts touched.
type Scripter struct {
	s       *Server
	mu      sync.Mutex
	scripts map[string]*Script
	results []*Result
	specs   map[string]*specRules // ScripterFor: by SHA1
}

var _ redis.Scripter = (*Scripter)(nil)

// Scripter returns a new redis.Scripter on the Server, with an empty script cache.
func (s *Server) Scripter() *Scripter {
	return &Scripter{s: s, scripts: map[string]*Script{}}
}

// Results are the Results of every run so far, in order.
func (sc *Scripter) Results() []*Result {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return append([]*Result(nil), sc.results...)
}

// Check is the first violation of any run so far, or nil.
func (sc *Scripter) Check() error {
	for _, r := range sc.Results() {
		if err := r.Check(); err != nil {
			return err
		}
	}
	return nil
}

// ScriptLoad compiles src into the cache and answers its SHA1.
func (sc *Scripter) ScriptLoad(ctx context.Context, src string) *redis.StringCmd {
	cmd := redis.NewStringCmd(ctx, "script", "load", src)
	if _, _, shebangErr := readShebang([]byte(src)); shebangErr != "" {
		cmd.SetErr(&ErrorReply{Msg: "ERR " + shebangErr})
		return cmd
	}
	script, err := Load("user_script", []byte(src))
	if err != nil {
		cmd.SetErr(&ErrorReply{Msg: "ERR Error compiling script (new function): " + err.Error()})
		return cmd
	}
	sc.mu.Lock()
	sc.scripts[script.SHA1()] = script
	sc.mu.Unlock()
	cmd.SetVal(script.SHA1())
	return cmd
}

// ScriptExists reports which SHA1s are cached.
func (sc *Scripter) ScriptExists(ctx context.Context, hashes ...string) *redis.BoolSliceCmd {
	cmd := redis.NewBoolSliceCmd(ctx, "script", "exists")
	sc.mu.Lock()
	defer sc.mu.Unlock()
	out := make([]bool, len(hashes))
	for i, h := range hashes {
		_, out[i] = sc.scripts[h]
	}
	cmd.SetVal(out)
	return cmd
}

// Eval loads and runs src.
func (sc *Scripter) Eval(ctx context.Context, src string, keys []string, args ...any) *redis.Cmd {
	return sc.eval(ctx, "eval", src, false, keys, args)
}

// EvalRO is Eval as EVAL_RO: a script that writes is refused.
func (sc *Scripter) EvalRO(ctx context.Context, src string, keys []string, args ...any) *redis.Cmd {
	return sc.eval(ctx, "eval_ro", src, true, keys, args)
}

// eval is EVAL and EVAL_RO (name): src loaded, then run.
func (sc *Scripter) eval(ctx context.Context, name, src string, readOnly bool, keys []string, args []any) *redis.Cmd {
	load := sc.ScriptLoad(ctx, src)
	if load.Err() != nil {
		cmd := redis.NewCmd(ctx, name)
		cmd.SetErr(load.Err())
		return cmd
	}
	return sc.run(ctx, name, load.Val(), readOnly, keys, args)
}

// EvalSha runs a cached script, or answers NOSCRIPT.
func (sc *Scripter) EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	return sc.run(ctx, "evalsha", sha1, false, keys, args)
}

// EvalShaRO runs a cached script as EVALSHA_RO.
func (sc *Scripter) EvalShaRO(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	return sc.run(ctx, "evalsha_ro", sha1, true, keys, args)
}

func (sc *Scripter) run(ctx context.Context, name, sha1 string, readOnly bool, keys []string, args []any) *redis.Cmd {
	cmd := redis.NewCmd(ctx, name, sha1, len(keys))
	sc.mu.Lock()
	script, ok := sc.scripts[sha1]
	sc.mu.Unlock()
	if !ok {
		cmd.SetErr(&ErrorReply{Msg: "NOSCRIPT No matching script. Please use EVAL."})
		return cmd
	}
	var res *Result
	spec := sc.specs[sha1]
	switch {
	case readOnly && script.info.Shebang && !script.ReadOnly():
		res = sc.s.RunReadOnly(script, keys, args...)
	default:
		res = sc.s.run(script, keys, args, readOnly, spec)
	}
	sc.mu.Lock()
	sc.results = append(sc.results, res)
	sc.mu.Unlock()
	switch {
	case res.Err != nil:
		cmd.SetErr(res.Err)
	case res.Reply == nil:
		cmd.SetErr(redis.Nil)
	default:
		cmd.SetVal(res.Reply)
	}
	return cmd
}
