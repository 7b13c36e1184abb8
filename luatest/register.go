package luatest

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/hanchat/luagen/gen/rediscmd"
)

// CommandFunc implements a command the harness lacks, for Server.RegisterCommand.
// It answers with the reply a client would get, as a Go value: int64 (or any
// int) for an integer, string or []byte for a bulk string, Status for a status
// reply, nil for a nil bulk string, []any for an array (of these values, an
// error among them being an error reply inside the array); or with an error,
// which becomes an error reply (an *ErrorReply's Msg as it is, any other error
// as "ERR " and its text).
type CommandFunc func(call *Call) (any, error)

// CommandSpec describes a registered command Redis's own table does not know
// (a module's command, say), in COMMAND INFO's terms. A command Redis knows
// takes its arity, flags and keys from Redis's table instead.
type CommandSpec struct {
	// Arity is Redis's: N means exactly N arguments counting the name, -N at least N.
	Arity int
	// Write: the command modifies the keyspace (read-only scripts may not call it).
	Write bool
	// FirstKey, LastKey and KeyStep are the legacy key positions: the first
	// key's index (the name is 0; 0 for no keys), the last one's (negative
	// counts from the end: -1 is the last argument) and the step between keys.
	FirstKey, LastKey, KeyStep int
}

// Call is one call of a registered command.
type Call struct {
	// Argv is the call as sent: Argv[0] the command name (then the
	// subcommand's, for a subcommand), then its arguments.
	Argv []string
	// Keys are the arguments that are keys, found from the command's key specs.
	Keys []string

	c *cmdCtx
}

// Now is the Server's clock, which stands still while a script runs.
func (call *Call) Now() time.Time { return time.UnixMilli(call.c.now) }

// Do runs another command on the same keyspace (built in or registered),
// as a client would; what it writes and the TTLs it sets count for the
// running script. The reply and error are as Server.Do gives them.
func (call *Call) Do(args ...any) (any, error) {
	argv, err := encodeCommand(args, "Call.Do")
	if err != nil {
		return nil, err
	}
	return replyResult(call.c.s.clientCall(argv, call.c.now, call.c.run))
}

type registeredCommand struct {
	fn   handler
	spec *CommandSpec
}

// RegisterCommand adds a command the harness does not implement, for this
// Server only. name is the command as Redis names it ("OBJECT ENCODING",
// "object|encoding" or "DUMP"); for a command Redis's table knows, spec must
// be nil: its arity, flags, key positions and whether scripts may call it are
// Redis's. A name Redis does not know (a module's command) needs a spec.
// Registering a command the harness already implements, a container command
// (register its subcommands), or a name twice is an error.
func (s *Server) RegisterCommand(name string, fn CommandFunc, spec *CommandSpec) error {
	if fn == nil {
		return fmt.Errorf("luatest: RegisterCommand %q: nil CommandFunc", name)
	}
	key := strings.ToLower(strings.Join(strings.Fields(name), "|"))
	if key == "" {
		return errors.New("luatest: RegisterCommand: empty command name")
	}
	cmd := rediscmd.Lookup(key)
	switch {
	case cmd != nil && spec != nil:
		return fmt.Errorf("luatest: RegisterCommand %q: Redis knows %s; its arity, flags and keys come from Redis's table, so spec must be nil", name, cmd.Display())
	case cmd != nil && cmd.IsContainer():
		return fmt.Errorf("luatest: RegisterCommand %q: %s is a container command; register its subcommands (%s ...)", name, cmd.Display(), cmd.Subcommands[0].Display())
	case cmd != nil && builtins[key] != nil:
		return fmt.Errorf("luatest: RegisterCommand %q: luatest already implements %s", name, cmd.Display())
	case cmd == nil && spec == nil:
		return fmt.Errorf("luatest: RegisterCommand %q: Redis 7.0 has no such command; describe it with a CommandSpec", name)
	case cmd == nil && strings.Contains(key, "|"):
		return fmt.Errorf("luatest: RegisterCommand %q: Redis 7.0 has no such subcommand", name)
	case cmd == nil && spec.Arity == 0:
		return fmt.Errorf("luatest: RegisterCommand %q: CommandSpec.Arity is 0 (use N for exactly N arguments, -N for at least N)", name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.registered[key] != nil {
		return fmt.Errorf("luatest: RegisterCommand %q: already registered", name)
	}
	if s.registered == nil {
		s.registered = map[string]*registeredCommand{}
	}
	var own *CommandSpec
	if spec != nil {
		cp := *spec
		own = &cp
	}
	display := strings.ToUpper(key)
	if cmd != nil {
		display = cmd.Display()
	}
	s.registered[key] = &registeredCommand{spec: own, fn: func(c *cmdCtx) reply {
		v, err := fn(&Call{Argv: append([]string(nil), c.argv...), Keys: c.keys, c: c})
		if err != nil {
			var er *ErrorReply
			if errors.As(err, &er) {
				return errReply(mapNewlines(er.Msg))
			}
			return errReply(mapNewlines("ERR " + err.Error()))
		}
		return goToReply(display, v)
	}}
	return nil
}

// goToReply converts what a CommandFunc answered into a reply.
func goToReply(display string, v any) reply {
	switch v := v.(type) {
	case nil:
		return nilReply{}
	case Status:
		return statusReply(mapNewlines(string(v)))
	case string:
		return bulkReply(v)
	case []byte:
		return bulkReply(v)
	case int, int64, int32:
		return intReply(reflect.ValueOf(v).Int())
	case uint32:
		return intReply(v)
	case *ErrorReply:
		return errReply(mapNewlines(v.Msg))
	case error:
		return errReply(mapNewlines("ERR " + v.Error()))
	case []any:
		out := make(arrayReply, len(v))
		for i, e := range v {
			out[i] = goToReply(display, e)
		}
		return out
	}
	return errReply(fmt.Sprintf("ERR luatest: the registered %s answered with a %T, which is no Redis reply", display, v))
}

// replyResult is a reply as Server.Do returns it.
func replyResult(r reply) (any, error) {
	if e, ok := r.(errReply); ok {
		return nil, &ErrorReply{Msg: string(e)}
	}
	return replyToGo(r), nil
}
