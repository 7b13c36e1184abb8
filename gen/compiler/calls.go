package compiler

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/gen/luascript"
	"github.com/hanchat/luagen/gen/rediscmd"
)

// checkCalls checks every redis.call / redis.pcall of a script against Redis's
// command table and returns what it refuses, and the command each call runs
// (nil where it cannot tell).
func checkCalls(s *keyspec.Script, info *luascript.Info, display string) ([]Problem, []*rediscmd.Command) {
	var errs []Problem
	cmds := make([]*rediscmd.Command, len(info.Calls))
	for i, c := range info.Calls {
		cmd, found := checkCall(s, c)
		cmds[i] = cmd
		for _, f := range found {
			errs = append(errs, Problem{Rule: f.rule, Err: &keyspec.Error{Pos: keyspec.Pos{File: display, Line: c.Line}, Msg: f.msg}})
		}
	}
	return errs, cmds
}

type finding struct{ rule, msg string }

func refuse(rule, format string, a ...any) []finding {
	return []finding{{rule, fmt.Sprintf(format, a...)}}
}

// resolve is the command or subcommand a call runs.
func resolve(c luascript.Call) (*rediscmd.Command, []finding) {
	if c.Command == "" {
		if c.Args == nil {
			return nil, refuse(RuleDynamicCmd, "redis.%s used other than as a direct call: the command it runs cannot be read; call redis.%s('COMMAND', ...) with the command's name as a string literal", c.Fn, c.Fn)
		}
		return nil, refuse(RuleDynamicCmd, "redis.%s with a command that is not a string literal: the command checks and the ACL need its name; write it as a literal", c.Fn)
	}
	var top *rediscmd.Command
	if !strings.Contains(c.Command, "|") {
		top = rediscmd.Lookup(c.Command)
	}
	if top == nil {
		return nil, refuse(RuleUnknownCmd, "redis.%s(%q, ...): Redis %s has no such command (Redis answers %q); check the name against COMMAND DOCS", c.Fn, c.Command, rediscmd.ServerVersion, rediscmd.ScriptErrUnknown)
	}
	if !top.IsContainer() {
		return top, nil
	}
	if len(c.Args) < 2 {
		return nil, refuse(RuleArity, "%s is a container command: name its subcommand (redis.%s('%s', 'SUBCOMMAND', ...))", top.Display(), c.Fn, strings.ToUpper(top.Name))
	}
	subArg := c.Args[1]
	if subArg.Kind != luascript.ArgString {
		return nil, refuse(RuleDynamicCmd, "the subcommand of %s is %s, not a string literal: the checks and the ACL grant (%s|<subcommand>) need its name; write it as a literal", top.Display(), subArg.Desc, top.Name)
	}
	sub := top.Subcommand(subArg.Text)
	if sub == nil {
		return nil, refuse(RuleUnknownCmd, "%s has no subcommand %q in Redis %s (Redis answers %q)", top.Display(), subArg.Text, rediscmd.ServerVersion, rediscmd.ScriptErrUnknown)
	}
	return sub, nil
}

// checkCall is what is refused in one call.
func checkCall(s *keyspec.Script, c luascript.Call) (*rediscmd.Command, []finding) {
	cmd, found := resolve(c)
	if cmd == nil {
		return nil, found
	}
	name := cmd.Display()
	switch {
	case cmd.Name == "select":
		return cmd, refuse(RuleScriptSelect, "SELECT in a script: the script would go on in another database than the one its keys and its client's connection are declared in; remove it (a client reaches a database through its URL)")
	case cmd.Name == "move" || cmd.Name == "swapdb":
		return cmd, refuse(RuleCrossDB, "%s moves data into another database, outside the one the spec declares these keys in: remove it", name)
	case cmd.HasToken("DB") && !cmd.Has(rediscmd.FlagNoScript):
		return cmd, refuse(RuleCrossDB, "%s is refused: its DB option (%s ... DB n) writes into another database, and an ACL that grants %s cannot forbid that option to the user; copy the value with its type's own commands (GET/SET, HGETALL/HSET, ...)", name, name, name)
	case cmd.Has(rediscmd.FlagNoScript) && cmd.InCategory("scripting"):
		return cmd, refuse(RuleNoScript, "%s inside a script: Redis refuses it (%q); a script cannot run or manage scripts: do the work in this script, or call the other script from Go", name, rediscmd.ScriptErrNoScript)
	case cmd.Has(rediscmd.FlagNoScript):
		return cmd, refuse(RuleNoScript, "%s inside a script: Redis refuses it (%q): remove it", name, rediscmd.ScriptErrNoScript)
	}
	if why := keyspec.NeverGranted(cmd); why != "" {
		return cmd, refuse(RuleDangerous, "%s is never granted by the generated ACL (%s), so no script may call it: remove it", name, why)
	}
	if !cmd.TakesKeys() && !keylessAllowed[cmd.Name] {
		if cmd.InCategory("keyspace") {
			return cmd, refuse(RuleKeyless, "%s works on the whole database, not on the keys passed in KEYS: a script touches only its KEYS, and no key pattern of the ACL confines the %s grant it would need; remove it", name, name)
		}
		return cmd, refuse(RuleKeyless, "%s takes no key: it reads or changes the server, not the keys passed in KEYS; a script may call only commands on its KEYS and TIME, PING, ECHO, PUBLISH, SPUBLISH: remove it", name)
	}
	spread := len(c.Args) > 0 && c.Args[len(c.Args)-1].Kind == luascript.ArgSpread
	if n := len(c.Args); spread && cmd.Arity > 0 && n-1 > cmd.Arity || !spread && !cmd.ArityOK(n) {
		return cmd, refuse(RuleArity, "%s takes %s counting its name, this call passes %d: Redis answers %q", name, cmd.ArityText(), n, rediscmd.ScriptErrArity)
	}
	keys, err := cmd.StaticKeyPositions(staticArgs(c.Args))
	var ke *rediscmd.KeyError
	switch {
	case errors.Is(err, rediscmd.ErrKeysIncomplete):
		return cmd, refuse(RuleScriptKey, "%s: Redis's key specs cannot find every key it touches (%s), so its keys cannot be checked against KEYS: remove it", name, err)
	case errors.Is(err, rediscmd.ErrKeysInvalid):
		return cmd, refuse(RuleArity, "%s: %s; Redis refuses the call", name, err)
	case errors.As(err, &ke):
		at := ""
		if ke.Arg >= 0 && ke.Arg < len(c.Args) {
			at = fmt.Sprintf(" (argument %d of redis.%s: %s)", ke.Arg+1, c.Fn, c.Args[ke.Arg].Desc)
		}
		return cmd, refuse(RuleScriptKey, "%s: where its keys are is not known before it runs: %s%s; write the arguments that place the keys (keywords, numkeys, every key) out in the call, as literals and KEYS[n]", name, err, at)
	case err != nil:
		return cmd, refuse(RuleScriptKey, "%s: %v", name, err)
	}
	var out []finding
	for _, k := range keys {
		a := c.Args[k.Pos]
		if a.Kind == luascript.ArgKey {
			continue
		}
		out = append(out, finding{RuleScriptKey, fmt.Sprintf(
			"%s: argument %d of redis.%s is a key, and it is %s, not taken from KEYS: a script touches only the keys passed in KEYS; pass this key in KEYS and use KEYS[n] (or a local set from KEYS[n] and never assigned again)",
			name, k.Pos+1, c.Fn, a.Desc)})
	}
	if s.ReadOnly && cmd.RefusedReadOnly() {
		out = append(out, finding{RuleSignature, fmt.Sprintf("script %q is read_only but calls %s", s.Name, name)})
	}
	return cmd, out
}

// staticArgs is a call's arguments as the command table's key search takes them.
func staticArgs(args []luascript.Arg) []rediscmd.Arg {
	out := make([]rediscmd.Arg, len(args))
	for i, a := range args {
		switch a.Kind {
		case luascript.ArgString, luascript.ArgInteger:
			out[i] = rediscmd.Literal(a.Text)
		case luascript.ArgNumber:
			out[i] = rediscmd.Arg{Number: true}
		case luascript.ArgSpread:
			out[i] = rediscmd.Arg{Spread: true}
		}
	}
	return out
}
