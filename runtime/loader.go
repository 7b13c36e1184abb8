package runtime

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/redis/go-redis/v9"
)

// ErrUndeclaredScript: a SCRIPT LOAD through a client made by WithLoader of a
// source that is none of the scripts it was given. It never reaches the server.
var ErrUndeclaredScript = errors.New("SCRIPT LOAD of a script not declared to the loader")

// WithLoader lets c recover NOSCRIPT under a generated aclfile, where its
// application user runs scripts (EVALSHA) but may not load them: every SCRIPT
// LOAD sent through c (Script.Run's and Batch.Exec's NOSCRIPT recovery, Preload)
// is sent through loader instead, a client of the instance's loader user
// (acl.LoaderUser: SCRIPT LOAD and PING, nothing else), and only when its
// source is exactly one of scripts (the generated AllScripts()); any other
// source is refused with ErrUndeclaredScript before it reaches Redis.
//
// The trade-off: a process that holds the loader's credential can load any Lua
// through it (the check above binds this process's code, not an attacker who
// reads the credential), so it is as trusted as the deploy job. Without
// WithLoader, a service runs only what a deploy step loaded (Preload with a
// loader client, on every node): after a restart, a failover to a replica that
// was never loaded or a SCRIPT FLUSH its calls fail with NOPERM (a
// *ScriptError with Code "NOPERM") until the deploy step runs again. Functions
// mode (scripts persisted and replicated by Redis) needs neither.
//
// c is a *redis.Client or a *redis.ClusterClient (loader then a ClusterClient of
// the same cluster, whose SCRIPT LOAD reaches every node). SCRIPT LOAD queued
// inside a pipeline of c is not redirected. WithLoader returns c.
func WithLoader[C redis.UniversalClient](c C, loader redis.Scripter, scripts ...*Script) C {
	h := &loaderHook{loader: loader, known: map[string]*Script{}}
	for _, s := range scripts {
		h.known[s.sha] = s
	}
	c.AddHook(h)
	return c
}

type loaderHook struct {
	loader redis.Scripter
	known  map[string]*Script
}

func (h *loaderHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

func (h *loaderHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h *loaderHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		src, ok := scriptLoadSource(cmd)
		if !ok {
			return next(ctx, cmd)
		}
		var setVal func(string)
		switch c := cmd.(type) {
		case *redis.StringCmd: // ScriptLoad
			setVal = c.SetVal
		case *redis.Cmd: // Do("script", "load", src)
			setVal = func(v string) { c.SetVal(v) }
		default:
			return next(ctx, cmd)
		}
		sc := cmd
		sum := sha1.Sum([]byte(src))
		s := h.known[hex.EncodeToString(sum[:])]
		if s == nil || s.src != src {
			err := fmt.Errorf("runtime: source with SHA1 %s: %w", hex.EncodeToString(sum[:]), ErrUndeclaredScript)
			sc.SetErr(err)
			return err
		}
		v, err := h.loader.ScriptLoad(ctx, src).Result()
		if err != nil {
			var re redis.Error
			if errors.As(err, &re) {
				err = loaderReply{re}
			} else {
				err = fmt.Errorf("as the loader user: %w", err)
			}
			sc.SetErr(err)
			return err
		}
		setVal(v)
		return nil
	}
}

// loaderReply is an error reply to the loader's SCRIPT LOAD: still a redis.Error
// (so its code reaches ScriptError.Code), saying whose call it answered.
type loaderReply struct{ reply redis.Error }

func (e loaderReply) Error() string { return e.reply.Error() + " (SCRIPT LOAD as the loader user)" }

// RedisError marks it as an error reply of the server.
func (e loaderReply) RedisError() {}

func (e loaderReply) Unwrap() error { return e.reply }

// scriptLoadSource is the source of a SCRIPT LOAD command.
func scriptLoadSource(cmd redis.Cmder) (string, bool) {
	args := cmd.Args()
	if len(args) != 3 || !strings.EqualFold(cmd.Name(), "script") {
		return "", false
	}
	sub, ok := args[1].(string)
	if !ok || !strings.EqualFold(sub, "load") {
		return "", false
	}
	src, ok := args[2].(string)
	return src, ok
}
