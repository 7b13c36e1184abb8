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
func checkCalls(s *keyspec.Script, info *luascript.Info, display string) ([]Problem, []*rediscmd.Command, []Resolved) {
	var errs []Problem
	var resolved []Resolved
	seen := map[string]bool{}
	cmds := make([]*rediscmd.Command, len(info.Calls))
	for i, c := range info.Calls {
		cmd, found, res := checkCall(s, c)
		cmds[i] = cmd
		for _, r := range res {
			r.Call = i
			resolved = append(resolved, r)
		}
		for _, f := range found {
			line := c.Line
			if f.line > 0 {
				line = f.line
			}
			// A helper reached from several sites may repeat a finding.
			if k := fmt.Sprintf("%d %s %s", line, f.rule, f.msg); !seen[k] {
				seen[k] = true
				errs = append(errs, Problem{Rule: f.rule, Err: &keyspec.Error{Pos: keyspec.Pos{File: display, Line: line}, Msg: f.msg}})
			}
		}
	}
	return errs, cmds, resolved
}

type finding struct {
	rule, msg string
	line      int // where to report it, when not the call's line
}

func refuse(rule, format string, a ...any) []finding {
	return []finding{{rule: rule, msg: fmt.Sprintf(format, a...)}}
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
func checkCall(s *keyspec.Script, c luascript.Call) (*rediscmd.Command, []finding, []Resolved) {
	cmd, found := resolve(c)
	if cmd == nil {
		return nil, found, nil
	}
	cmd, found = checkCommand(s, c, cmd)
	if found != nil {
		return cmd, found, nil
	}
	return checkArgs(s, c, cmd)
}

// checkCommand is what is refused of the command itself, whatever its arguments.
func checkCommand(s *keyspec.Script, c luascript.Call, cmd *rediscmd.Command) (*rediscmd.Command, []finding) {
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
	return cmd, nil
}

// checkArgs checks a call's arguments: its arity, where its keys are, that each
// is a key the script may touch, and a channel it builds.
func checkArgs(s *keyspec.Script, c luascript.Call, cmd *rediscmd.Command) (*rediscmd.Command, []finding, []Resolved) {
	name := cmd.Display()
	c.Args = expandKeys(s, c.Args)
	spread := len(c.Args) > 0 && c.Args[len(c.Args)-1].Kind == luascript.ArgSpread
	if n := len(c.Args); spread && cmd.Arity > 0 && n-1 > cmd.Arity || !spread && !cmd.ArityOK(n) {
		return cmd, refuse(RuleArity, "%s takes %s counting its name, this call passes %d: Redis answers %q", name, cmd.ArityText(), n, rediscmd.ScriptErrArity), nil
	}
	keys, err := cmd.StaticKeyPositions(StaticArgs(c.Args))
	runs := []keyRun{{c.Args, keys}}
	if err != nil && keysOnlySpread(c.Args) {
		runs, err = expandSpread(cmd, c.Args)
	}
	var ke *rediscmd.KeyError
	switch {
	case errors.Is(err, rediscmd.ErrKeysIncomplete):
		return cmd, refuse(RuleScriptKey, "%s: Redis's key specs cannot find every key it touches (%s), so its keys cannot be checked against KEYS: remove it", name, err), nil
	case errors.Is(err, rediscmd.ErrKeysInvalid):
		return cmd, refuse(RuleArity, "%s: %s; Redis refuses the call", name, err), nil
	case errors.As(err, &ke):
		at := ""
		if ke.Arg >= 0 && ke.Arg < len(c.Args) {
			at = fmt.Sprintf(" (argument %d of redis.%s: %s)", ke.Arg+1, c.Fn, c.Args[ke.Arg].Desc)
		}
		return cmd, refuse(RuleScriptKey, "%s: where its keys are is not known before it runs: %s%s; write the arguments that place the keys (keywords, numkeys, every key) out in the call, as literals and KEYS[n]", name, err, at), nil
	case err != nil:
		return cmd, refuse(RuleScriptKey, "%s: %v", name, err), nil
	}
	var out []finding
	var resolved []Resolved
	for _, r := range runs {
		for _, k := range r.keys {
			res, found := checkKey(s, c, r.args[k.Pos], k.Pos, cmd)
			out = append(out, found...)
			resolved = append(resolved, res)
		}
	}
	if (cmd.Name == "publish" || cmd.Name == "spublish") && len(c.Args) > 1 {
		res, found := checkChannel(s, c, c.Args[1], 1, cmd)
		out = append(out, found...)
		if len(res.Channels) > 0 {
			resolved = append(resolved, res)
		}
	}
	if s.ReadOnly && cmd.RefusedReadOnly() {
		out = append(out, finding{rule: RuleSignature, msg: fmt.Sprintf("script %q is read_only but calls %s", s.Name, name)})
	}
	return cmd, out, resolved
}

// StaticArgs is a call's arguments as the command table's key search
// (rediscmd.Command.StaticKeyPositions) takes them.
func StaticArgs(args []luascript.Arg) []rediscmd.Arg {
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

// keysOnlySpread reports whether the call ends in a spread every element of
// which is a whole KEYS[n] (unpack of a table of keys).
func keysOnlySpread(args []luascript.Arg) bool {
	n := len(args)
	if n == 0 || args[n-1].Kind != luascript.ArgSpread || len(args[n-1].Alts) == 0 {
		return false
	}
	for _, s := range args[n-1].Alts {
		if _, ok := s.Key(); !ok {
			return false
		}
	}
	return true
}

// spreadLengths are the lengths a keys-only spread is tried at. Whatever the
// length, each element is a KEYS value: where the key specs place keys among
// them depends only on the fixed arguments, which every length checks.
var spreadLengths = []int{0, 1, 2, 3, 4, 7}

// keyRun is a call's arguments and the key positions among them.
type keyRun struct {
	args []luascript.Arg
	keys []rediscmd.Key
}

// expandSpread finds the key positions of a call ending in a spread of KEYS
// values by trying it at several lengths; the keys of every length are checked
// (a fixed argument may be a key at one length and not at another).
func expandSpread(cmd *rediscmd.Command, args []luascript.Arg) ([]keyRun, error) {
	n := len(args)
	sp := args[n-1]
	elem := luascript.Arg{Kind: luascript.ArgKey, Alts: sp.Alts, Desc: "an element of " + sp.Desc}
	for _, s := range sp.Alts {
		k, _ := s.Key()
		elem.KeyAlts = append(elem.KeyAlts, k)
	}
	var runs []keyRun
	for _, l := range spreadLengths {
		expanded := append(append([]luascript.Arg{}, args[:n-1]...), make([]luascript.Arg, l)...)
		for i := n - 1; i < len(expanded); i++ {
			expanded[i] = elem
		}
		if !cmd.ArityOK(len(expanded)) {
			continue
		}
		k, err := cmd.StaticKeyPositions(StaticArgs(expanded))
		if err != nil {
			return nil, err
		}
		runs = append(runs, keyRun{expanded, k})
	}
	if runs == nil {
		_, err := cmd.StaticKeyPositions(StaticArgs(args))
		return nil, err
	}
	return runs, nil
}
