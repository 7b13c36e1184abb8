package luatest

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hanchat/luagen/gen/rediscmd"
)

// A call reaches a command in three steps, as in Redis: the command table
// (gen/rediscmd, generated from the server's own COMMAND INFO and COMMAND
// DOCS) says whether the command exists, its arity, whether scripts may call
// it, whether it writes and where its keys are; then the harness's own
// implementation runs it, or a command a test registered with
// Server.RegisterCommand, or the call is refused with "luatest does not
// implement X".

// handler runs one command and answers with its reply.
type handler func(c *cmdCtx) reply

// withArg is the handler that runs f with a, for the commands one function
// serves with a flag or a kind: LPOP is withArg(popGeneric, true).
func withArg[A any](f func(*cmdCtx, A) reply, a A) handler {
	return func(c *cmdCtx) reply { return f(c, a) }
}

// withArgs is withArg for a function of two such arguments.
func withArgs[A, B any](f func(*cmdCtx, A, B) reply, a A, b B) handler {
	return func(c *cmdCtx) reply { return f(c, a, b) }
}

// route is how a call is run: what Redis's table says about the command, and
// who implements it.
type route struct {
	name    string // the table's name: "get", "xgroup|create"
	display string // as people write it: "GET", "XGROUP CREATE"
	cmd     *rediscmd.Command
	custom  *CommandSpec // a registered command Redis's table does not know
	fn      handler      // nil when nobody implements it
}

func (rt *route) arityOK(argc int) bool {
	if rt.cmd != nil {
		return rt.cmd.ArityOK(argc)
	}
	if rt.custom.Arity >= 0 {
		return argc == rt.custom.Arity
	}
	return argc >= -rt.custom.Arity
}

// writes reports whether a read-only script may not call the command: Redis
// refuses its write and may-replicate commands there.
func (rt *route) writes() bool {
	if rt.cmd != nil {
		return rt.cmd.RefusedReadOnly()
	}
	return rt.custom.Write
}

func (rt *route) noscript() bool { return rt.cmd != nil && rt.cmd.Has(rediscmd.FlagNoScript) }

// keys are the arguments of a call that are keys, found as Redis finds them;
// none when the arguments do not fit (the command then fails on its own).
func (rt *route) keys(argv []string) []string {
	var out []string
	if rt.cmd == nil {
		sp := rt.custom
		if sp.FirstKey <= 0 {
			return nil
		}
		last := sp.LastKey
		if last < 0 {
			last = len(argv) + last
		}
		step := max(sp.KeyStep, 1)
		for i := sp.FirstKey; i <= last && i < len(argv); i += step {
			out = append(out, argv[i])
		}
		return out
	}
	positions, err := rt.cmd.KeyPositions(argv)
	if err != nil && !errors.Is(err, rediscmd.ErrKeysIncomplete) {
		return nil
	}
	for _, k := range positions {
		out = append(out, argv[k.Pos])
	}
	return out
}

// routeFor resolves a call. unknown is Redis's refusal of an unknown command
// or subcommand to a client; ok is false with it.
func (s *Server) routeFor(argv []string) (rt *route, unknown errReply, ok bool) {
	name := strings.ToLower(argv[0])
	if reg := s.registered[name]; reg != nil && reg.spec != nil {
		return &route{name: name, display: strings.ToUpper(name), custom: reg.spec, fn: reg.fn}, "", true
	}
	cmd, err := rediscmd.Resolve(argv)
	if err != nil {
		if errors.Is(err, rediscmd.ErrUnknownSubcommand) {
			return nil, errReply(mapNewlines(fmt.Sprintf("ERR unknown subcommand '%s'. Try %s HELP.", truncate(argv[1], 128), strings.ToUpper(argv[0])))), false
		}
		return nil, unknownCommandError(argv), false
	}
	rt = &route{name: cmd.Name, display: cmd.Display(), cmd: cmd, fn: builtins[cmd.Name]}
	if reg := s.registered[cmd.Name]; reg != nil {
		rt.fn = reg.fn
	}
	return rt, "", true
}

// notImplemented is the refusal of a command Redis has and the harness lacks.
func notImplemented(rt *route) errReply {
	return errReply(fmt.Sprintf("ERR luatest does not implement %s (Server.RegisterCommand can add it)", rt.display))
}

// Script-side refusals, as Redis 7.0's scriptCall words them.
const (
	errScriptUnknown  = errReply("ERR " + rediscmd.ScriptErrUnknown)
	errScriptArity    = errReply("ERR " + rediscmd.ScriptErrArity)
	errScriptNoScript = errReply("ERR " + rediscmd.ScriptErrNoScript)
	errReadOnlyScript = errReply("ERR Write commands are not allowed from read-only scripts.")
)

// commandFailure carries an error reply from where a handler meets it (an
// argument that does not parse, a key holding the wrong type) to call, which
// answers with it: a handler reads as the steps Redis takes, each failing step
// ending the command as Redis's addReplyError-and-return does.
type commandFailure struct{ errr reply }

// must gives v, or ends the command with errr when errr is not nil.
func must[T any](v T, errr reply) T {
	check(errr)
	return v
}

// check ends the command with errr when errr is not nil.
func check(errr reply) {
	if errr != nil {
		panic(commandFailure{errr})
	}
}

// call runs the command on c; a failure it raised with must or check is its
// reply. Any other panic goes on up.
func (rt *route) call(c *cmdCtx) (r reply) {
	defer func() {
		if p := recover(); p != nil {
			f, ok := p.(commandFailure)
			if !ok {
				panic(p)
			}
			r = f.errr
		}
	}()
	return rt.fn(c)
}
