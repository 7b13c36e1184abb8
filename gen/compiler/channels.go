package compiler

import (
	"fmt"

	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/gen/luascript"
	"github.com/hanchat/luagen/gen/rediscmd"
)

// RuleChannel: a PUBLISH or SPUBLISH to a channel the spec does not declare
// for the script, or a channel position used as a key.
const RuleChannel = "channel"

// Publishes reports whether c publishes a message: a Pub/Sub command (pubsub
// flag) Redis runs in scripts that is not a subcommand of PUBSUB: PUBLISH and
// SPUBLISH. Its channel is its first argument.
func Publishes(c *rediscmd.Command) bool {
	return c != nil && c.Has(rediscmd.FlagPubSub) && !c.Has(rediscmd.FlagNoScript) && c.Container() == nil
}

// checkChannels checks the script's Pub/Sub: every PUBLISH and SPUBLISH
// names a channel the spec declares for it, and a channel position is used
// as nothing else. The generated ACL grants a user channels only under its
// channel prefixes, so a message to any other channel would be refused at run
// time (NOPERM) for a script generate had accepted.
//
// The channel is one of: KEYS[n] or ARGV[n] of a position that carries a
// declared channel (channel: in the spec), or a literal matching a declared
// channel of the instance that the script's user may publish to. A channel
// built in the script (a concatenation: 'events:' .. id) must match one of the
// script's derived channels (checkChannel, keys.go, reports one that does not).
func checkChannels(s *keyspec.Script, info *luascript.Info, cmds []*rediscmd.Command, resolved []Resolved, display string) []Problem {
	built := map[int]bool{} // calls whose channel checkChannel resolved
	for _, r := range resolved {
		if r.Arg == 1 && len(r.Channels) > 0 {
			built[r.Call] = true
		}
	}
	var out []Problem
	add := func(line int, format string, a ...any) {
		out = append(out, Problem{Rule: RuleChannel, Err: &keyspec.Error{Pos: keyspec.Pos{File: display, Line: line}, Msg: fmt.Sprintf(format, a...)}})
	}
	for i, c := range info.Calls {
		cmd := cmds[i]
		if cmd == nil {
			continue
		}
		if !Publishes(cmd) {
			for _, a := range c.Args {
				if a.Kind != luascript.ArgKey || a.Key == 0 {
					continue
				}
				if pos := s.KeyAt(a.Key); pos != nil && pos.Channel != nil && usedAsKey(cmd, c, a.Key) {
					add(c.Line, "%s takes KEYS[%d] %q as a key, but it passes channel %q's name: only PUBLISH and SPUBLISH take it", cmd.Display(), a.Key, pos.Name, pos.Channel.Name)
				}
			}
			continue
		}
		if len(c.Args) < 2 {
			continue // the arity check reports it
		}
		name := cmd.Display()
		switch a := c.Args[1]; a.Kind {
		case luascript.ArgKey:
			pos := s.KeyAt(a.Key)
			switch {
			case a.Key == 0:
				add(c.Line, "%s to KEYS[...] with an index that is not a literal: which position's channel it is cannot be read; publish to KEYS[n] of a channel position", name)
			case pos == nil:
			case pos.Channel == nil:
				add(c.Line, "%s to KEYS[%d] %q, a key position (%s): a channel passed in KEYS is declared with channel: <name> on its position", name, a.Key, pos.Name, keyNames(pos))
			}
		case luascript.ArgArgv:
			arg := s.ArgAt(a.Argv)
			switch {
			case a.Argv == 0 && channelsFrom(s, a.ArgvMin):
				// ARGV[i], i from a loop counting up from ArgvMin: every
				// argument the wrapper sends from there on is a channel.
			case a.Argv == 0:
				add(c.Line, "%s to ARGV[...] with an index that is not a literal: which argument's channel it is cannot be read; publish to ARGV[n] of a channel argument, or loop over the channel arguments only (for i = n, #ARGV, every argument from ARGV[n] on declared channel: <name>)", name)
			case arg == nil:
			case arg.Channel == nil:
				add(c.Line, "%s to ARGV[%d] %q, a %s argument: a channel passed in ARGV is declared with channel: <name> on the argument", name, a.Argv, arg.Name, arg.Type)
			}
		case luascript.ArgString:
			if why := literalChannel(s, a.Text); why != "" {
				add(c.Line, "%s to %q: %s", name, a.Text, why)
			}
		default:
			if built[i] || isBuilt(a) {
				continue // a derived channel, or refused by checkChannel with what it matched
			}
			add(c.Line, "%s to %s: which channel it is cannot be read; pass the channel in KEYS or ARGV on a position declared channel: <name>, build it as one of the script's derived channels, or write a declared channel's name as a literal", name, a.Desc)
		}
	}
	return out
}

// channelsFrom reports whether every ARGV the wrapper sends from position
// least on (1-based, at least 1) carries a declared channel, and there is one.
func channelsFrom(s *keyspec.Script, least int) bool {
	if least < 1 || least > len(s.Argv) {
		return false
	}
	for _, a := range s.Argv[least-1:] {
		if a.Channel == nil {
			return false
		}
	}
	return true
}

// usedAsKey reports whether KEYS[key] is among the keys Redis's key specs
// find in call c of cmd.
func usedAsKey(cmd *rediscmd.Command, c luascript.Call, key int) bool {
	keys, err := cmd.StaticKeyPositions(StaticArgs(c.Args))
	if err != nil {
		return false // checkCall reports the call
	}
	for _, k := range keys {
		if a := c.Args[k.Pos]; a.Kind == luascript.ArgKey && a.Key == key {
			return true
		}
	}
	return false
}

// keyNames lists a position's keys for messages.
func keyNames(pos *keyspec.ScriptKey) string {
	out := ""
	for i, k := range pos.OneOf {
		if i > 0 {
			out += ", "
		}
		out += "key " + k.Name
	}
	return out
}

// literalChannel says why a channel name written in the script is not one
// the script may publish to, or "".
func literalChannel(s *keyspec.Script, text string) string {
	in := s.Instance
	if in.Prefix != nil {
		return fmt.Sprintf("on instance %s every channel name starts with a deployment prefix known only at run time, so no literal names one: pass the channel in KEYS or ARGV on a position declared channel: <name>", in.Name)
	}
	var match *keyspec.Channel
	for _, c := range in.Channels {
		if c.Pattern.Match(text) {
			match = c
			break
		}
	}
	if match == nil {
		return fmt.Sprintf("no channel of instance %s has this name: declare it under channels (the generated ACL grants only declared channels' prefixes, and Redis would refuse the message with NOPERM)", in.Name)
	}
	if s.DB == nil || s.DB.User == nil {
		return ""
	}
	for _, p := range s.DB.User.ChannelPrefixes {
		if p.Covers(match.Pattern) {
			return ""
		}
	}
	return fmt.Sprintf("channel %q (%s) is outside every channel prefix of the script's user %s, so Redis would refuse the message (NOPERM): grant %s a channel prefix covering it", match.Name, match.Pattern.Raw, s.DB.User.Name, s.DB.User.Name)
}

// isBuilt reports whether one of an argument's alternatives is a name built
// of several parts ('events:' .. id), which checkChannel matches against the
// script's derived channels.
func isBuilt(a luascript.Arg) bool {
	for _, alt := range a.Alts {
		if len(alt.Parts) > 1 {
			return true
		}
	}
	return false
}
