// Package rueidisbackend runs luagen's generated wrappers on rueidis
// (github.com/redis/rueidis): the runtime.Backend of an instance whose spec says
// client: rueidis. Calls go out as EVALSHA (EVALSHA_RO for read-only scripts)
// through rueidis's automatic pipelining, on a single server or a cluster;
// NOSCRIPT loads the script once per node at a time and sends the call again;
// a context that has ended sends nothing and a deadline bounds the wait
// (rueidis honours it); a script that is neither read-only nor declared
// replay_safe is never retried by rueidis (only those two are marked
// retryable), and a failure after it was written is a
// runtime.OutcomeUnknownError.
//
// A program whose instances all use go-redis does not link this package or
// rueidis.
package rueidisbackend

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/hanchat/luagen/runtime"
	"github.com/redis/rueidis"
)

// Conn is a rueidis client checked to select one database, for a generated
// Clients of a rueidis instance.
type Conn struct {
	c  rueidis.Client
	db int
}

// New reads the database c selects (CLIENT INFO) and wraps c for generated
// code. NewScripts then refuses a Conn of another database than the scripts'.
func New(ctx context.Context, c rueidis.Client) (*Conn, error) {
	info, err := c.Do(ctx, c.B().ClientInfo().Build()).ToString()
	if err != nil {
		return nil, fmt.Errorf("rueidisbackend: CLIENT INFO: %w", err)
	}
	db := -1
	for _, f := range strings.Fields(info) {
		if v, ok := strings.CutPrefix(f, "db="); ok {
			if db, err = strconv.Atoi(v); err != nil {
				return nil, fmt.Errorf("rueidisbackend: CLIENT INFO: db=%q", v)
			}
		}
	}
	if db < 0 {
		return nil, errors.New("rueidisbackend: CLIENT INFO names no db")
	}
	return &Conn{c: c, db: db}, nil
}

// Client is the rueidis client.
func (c *Conn) Client() rueidis.Client { return c.c }

// DB is the database the client selects.
func (c *Conn) DB() int { return c.db }

// Bind makes the runtime.DB of a generated Scripts: c may be nil (a wrapper of
// that database then answers runtime.ErrNoClient); otherwise it must select
// database index. obs may be nil.
func Bind(c *Conn, name string, index int, obs runtime.Observer) (runtime.DB, error) {
	if c == nil {
		return runtime.BindBackend(nil, name, obs), nil
	}
	if c.db != index {
		return runtime.DB{}, fmt.Errorf("%s: client selects db %d, the scripts need db %d: %w", name, c.db, index, runtime.ErrWrongDB)
	}
	return runtime.BindBackend(c, name, obs), nil
}

// command builds in's EVALSHA (or EVALSHA_RO), retryable only when its script
// is. The keys and arguments are the Input's own strings (the scripts of a
// client: rueidis instance are made with runtime.StringArgs), which rueidis's
// builder copies into a pooled command: nothing is allocated here.
func (c *Conn) command(in *runtime.Input) rueidis.Completed {
	s := in.Script()
	args := in.Strings()
	keys, argv := args[:in.NumKeys()], args[in.NumKeys():]
	var cmd rueidis.Completed
	switch fn := s.Function(); {
	case fn != "" && s.ReadOnly():
		cmd = c.c.B().FcallRo().Function(fn).Numkeys(int64(len(keys))).Key(keys...).Arg(argv...).Build()
	case fn != "":
		cmd = c.c.B().Fcall().Function(fn).Numkeys(int64(len(keys))).Key(keys...).Arg(argv...).Build()
	case s.ReadOnly():
		cmd = c.c.B().EvalshaRo().Sha1(s.SHA1()).Numkeys(int64(len(keys))).Key(keys...).Arg(argv...).Build()
	default:
		cmd = c.c.B().Evalsha().Sha1(s.SHA1()).Numkeys(int64(len(keys))).Key(keys...).Arg(argv...).Build()
	}
	if s.Replayable() && !s.ReadOnly() {
		cmd = cmd.ToRetryable()
	}
	return cmd
}

// Run sends the call; on NOSCRIPT it loads the script (once per node at a
// time, however many callers) and sends it again, up to 3 times.
func (c *Conn) Run(ctx context.Context, call runtime.Input) (any, error) {
	in := &call
	s := in.Script()
	if err := ctx.Err(); err != nil {
		return nil, runtime.NotSent(s, err)
	}
	resp := c.c.Do(ctx, c.command(in))
	for loads, refusals := 0, 0; resp.Error() != nil; {
		switch err := resp.Error(); {
		case isNoScript(err) && loads < 3:
			loads++
			if err := s.LoadOnce(ctx, c, func(ctx context.Context) error { return c.load(ctx, s) }); err != nil {
				return nil, err
			}
		case !s.Replayable() && refusals < runtime.RefusedRetries && runtime.NotRun(err):
			// rueidis retries a refused call only when it may retry it.
			if err := runtime.RetryWait(ctx, refusals); err != nil {
				return nil, runtime.NotSent(s, err)
			}
			refusals++
		default:
			goto done
		}
		if err := ctx.Err(); err != nil {
			return nil, runtime.NotSent(s, err)
		}
		resp = c.c.Do(ctx, c.command(in))
	}
done:
	msg, err := resp.ToMessage()
	if err != nil {
		return nil, outcome(s, err)
	}
	return value(s, &msg)
}

func isNoScript(err error) bool {
	re, ok := rueidis.IsRedisErr(err)
	return ok && re.IsNoScript()
}

// load loads s on every node (a cluster's SCRIPT LOAD would reach one).
func (c *Conn) load(ctx context.Context, s *runtime.Script) error {
	if s.Function() != "" {
		return fmt.Errorf("script %s: %w", s.Name(), runtime.ErrFunctionsMode)
	}
	for addr, node := range c.c.Nodes() {
		sha, err := node.Do(ctx, node.B().ScriptLoad().Script(s.Source()).Build()).ToString()
		if err != nil {
			return fmt.Errorf("script %s: SCRIPT LOAD on %s: %w", s.Name(), addr, err)
		}
		if sha != s.SHA1() {
			return fmt.Errorf("script %s: SCRIPT LOAD on %s answered %s, want %s: %w", s.Name(), addr, sha, s.SHA1(), runtime.ErrSHAMismatch)
		}
	}
	return nil
}

// outcome classifies a failed call: an error reply is a *runtime.ScriptError;
// a failure before anything was written (a dial error, a closed client) is
// itself; anything else leaves the outcome unknown.
func outcome(s *runtime.Script, err error) error {
	if re, ok := rueidis.IsRedisErr(err); ok {
		msg := re.Error()
		code, _, _ := strings.Cut(msg, " ")
		return &runtime.ScriptError{Script: s.Name(), Code: code, Message: msg}
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" || errors.Is(err, rueidis.ErrClosing) {
		return fmt.Errorf("script %s: %w", s.Name(), err)
	}
	return &runtime.OutcomeUnknownError{Script: s.Name(), Err: err}
}

// value is a reply as go-redis would decode it (nil, int64, string, bool),
// except that an array is a runtime.Values over rueidis's own messages, which
// the generated decoders read field by field without boxing each one.
func value(s *runtime.Script, m *rueidis.RedisMessage) (any, error) {
	switch {
	case m.IsNil():
		return nil, nil
	case m.IsInt64():
		return m.AsInt64()
	case m.IsString():
		return m.ToString()
	case m.IsBool():
		return m.AsBool()
	case m.IsArray():
		arr, err := m.ToArray()
		if err != nil {
			return nil, err
		}
		return messages(arr), nil
	}
	return nil, &runtime.ReplyError{Script: s.Name(), Reason: "a reply of a type go-redis would not decode from a script"}
}

// messages is an array reply: runtime.Values over rueidis's messages.
type messages []rueidis.RedisMessage

// Len is the number of elements.
func (a messages) Len() int { return len(a) }

// At is element i as a runtime.Value.
func (a messages) At(i int) runtime.Value {
	m := &a[i]
	switch {
	case m.IsNil():
		return runtime.NilValue()
	case m.IsInt64():
		n, _ := m.AsInt64()
		return runtime.IntValue(n)
	case m.IsString():
		s, _ := m.ToString()
		return runtime.StringValue(s)
	case m.IsBool():
		b, _ := m.AsBool()
		return runtime.BoolValue(b)
	case m.IsArray():
		arr, _ := m.ToArray()
		return runtime.ArrayValue(messages(arr))
	}
	return runtime.OtherValue("a reply of another type")
}

// Preload loads every script on every node the client knows.
func Preload(ctx context.Context, c *Conn, scripts ...*runtime.Script) error {
	_, err := PreloadNodes(ctx, c, scripts...)
	return err
}

// PreloadNodes is runtime.PreloadNodes on rueidis: SCRIPT LOAD of every script
// on every node the client knows (a single server; every node of a cluster,
// replicas among them when the client connects to them), reported node by node
// with its role (ROLE: master or replica).
func PreloadNodes(ctx context.Context, c *Conn, scripts ...*runtime.Script) (runtime.PreloadReport, error) {
	var (
		mu sync.Mutex
		wg sync.WaitGroup
		r  runtime.PreloadReport
	)
	nodes := c.c.Nodes()
	for addr, node := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := runtime.NodeLoad{Addr: addr, Role: runtime.RoleServer}
			if len(nodes) > 1 {
				n.Role = runtime.RolePrimary
				if role, err := node.Do(ctx, node.B().Role().Build()).ToArray(); err == nil && len(role) > 0 {
					if r, _ := role[0].ToString(); r == "slave" {
						n.Role = runtime.RoleReplica
					}
				}
			}
			for _, s := range scripts {
				if s.Function() != "" {
					n.Err = fmt.Errorf("script %s: %w", s.Name(), runtime.ErrFunctionsMode)
					break
				}
				sha, err := node.Do(ctx, node.B().ScriptLoad().Script(s.Source()).Build()).ToString()
				if err == nil && sha != s.SHA1() {
					err = fmt.Errorf("SCRIPT LOAD answered %s, want %s: %w", sha, s.SHA1(), runtime.ErrSHAMismatch)
				}
				if err != nil {
					n.Err = fmt.Errorf("script %s: %w", s.Name(), err)
					break
				}
				n.Loaded = append(n.Loaded, s.Name())
			}
			mu.Lock()
			r.Nodes = append(r.Nodes, n)
			mu.Unlock()
		}()
	}
	wg.Wait()
	sort.Slice(r.Nodes, func(i, j int) bool {
		if r.Nodes[i].Role != r.Nodes[j].Role {
			return r.Nodes[i].Role < r.Nodes[j].Role
		}
		return r.Nodes[i].Addr < r.Nodes[j].Addr
	})
	return r, r.Err()
}
