package compiler

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/gen/luascript"
	"github.com/hanchat/luagen/gen/rediscmd"
)

// The rules of the TTL and bound checks.
const (
	// RuleTTL: a script that may create a key declared with a TTL rule never
	// sets its expiry, sets one the rule does not allow, or removes it; or a
	// script sets an expiry on a key declared ttl none.
	RuleTTL = "ttl"
	// RuleBound: a trim that keeps more than a list's or stream's max_len.
	RuleBound = "bound"
	// RuleTTLUnproven and RuleBoundUnproven are what the static reading cannot
	// tell (a key from KEYS[i] in a loop, a TTL or a trim count computed in
	// the script): luagen lint reports them; generate does not refuse them,
	// and the test harness checks the keys at run time.
	RuleTTLUnproven   = "ttl-unproven"
	RuleBoundUnproven = "bound-unproven"
)

// neverCreates are write commands whose key specs say they insert or update
// a key (Redis's table cannot tell more) but which never create a missing
// one: they change its expiry or existing entries, or do nothing on a missing
// key (LPUSHX, LINSERT), or fail (LSET, XACK, XCLAIM, XGROUP SETID).
// TestNeverCreatesOnAServer proves each on a redis-server.
var neverCreates = map[string]bool{
	"expire": true, "pexpire": true, "expireat": true, "pexpireat": true, "persist": true, "getex": true,
	"lset": true, "lpushx": true, "rpushx": true, "linsert": true,
	"xack": true, "xclaim": true, "xautoclaim": true, "xsetid": true, "xgroup|setid": true, "xgroup|createconsumer": true,
}

// mayCreate reports whether call c of cmd may create the key at argument
// index arg, whose key spec has flags: a write that inserts or updates, or
// overwrites, unless the command never creates a missing key or the call's
// literals say it will not (SET ... XX, XADD ... NOMKSTREAM, XGROUP CREATE
// without MKSTREAM).
func mayCreate(cmd *rediscmd.Command, c luascript.Call, flags []rediscmd.KeyFlag) bool {
	has := func(f rediscmd.KeyFlag) bool { return hasFlag(flags, f) }
	if !has(rediscmd.KeyInsert) && !has(rediscmd.KeyOW) && !(has(rediscmd.KeyUpdate) && has(rediscmd.KeyRW)) {
		return false
	}
	switch {
	case neverCreates[cmd.Name]:
		return false
	case cmd.Name == "set" && hasLiteral(c, "xx"):
		return false
	case cmd.Name == "xadd" && hasLiteral(c, "nomkstream"):
		return false
	case cmd.Name == "xgroup|create":
		return hasLiteral(c, "mkstream")
	}
	return true
}

func hasFlag(flags []rediscmd.KeyFlag, f rediscmd.KeyFlag) bool {
	for _, x := range flags {
		if x == f {
			return true
		}
	}
	return false
}

func hasLiteral(c luascript.Call, word string) bool {
	for _, l := range c.Literals {
		if l == word {
			return true
		}
	}
	return false
}

// expiryTokens are the options that give a key an expiry (SET, GETEX), with
// the unit of the value after them; absolute ones (EXAT, PXAT) take a time.
var expiryTokens = map[string]time.Duration{"ex": time.Second, "px": time.Millisecond, "exat": 0, "pxat": 0}

// expiryArgs are the names COMMAND DOCS gives the argument of the expiry
// commands (EXPIRE key seconds, PSETEX key milliseconds value, ...), with its
// unit (0: an absolute time).
var expiryArgs = map[string]time.Duration{"seconds": time.Second, "milliseconds": time.Millisecond, "unix-time-seconds": 0, "unix-time-milliseconds": 0}

// expiry is what one call does to the expiry of one KEYS position.
type expiry struct {
	set     bool          // gives it an expiry
	remove  bool          // removes it (PERSIST, GETEX PERSIST, a SET without an expiry option)
	value   luascript.Arg // the TTL or time it sets
	unit    time.Duration // of value; 0: an absolute time
	keepTTL bool          // SET ... KEEPTTL
}

// expiryOf is what call c of cmd does to the expiry of the key at argument
// index arg.
func expiryOf(cmd *rediscmd.Command, c luascript.Call, arg int) expiry {
	if cmd.Name == "persist" {
		return expiry{remove: true}
	}
	// EXPIRE key seconds, PSETEX key milliseconds value: the documented
	// argument after the key.
	for i, a := range cmd.Arguments {
		if unit, ok := expiryArgs[a.Name]; ok && a.Token == "" && i+1 < len(c.Args) && i > 0 && cmd.Arguments[0].Type == "key" && arg == 1 {
			return expiry{set: true, value: c.Args[i+1], unit: unit}
		}
	}
	if cmd.Name == "restore" && len(c.Args) > 2 {
		if v := c.Args[2]; v.Kind == luascript.ArgInteger && v.Text == "0" {
			return expiry{}
		}
		return expiry{set: true, value: c.Args[2], unit: time.Millisecond}
	}
	if !hasExpiryOptions(cmd) {
		return expiry{}
	}
	e := expiry{}
	for i := 2; i < len(c.Args); i++ {
		a := c.Args[i]
		if a.Kind != luascript.ArgString {
			continue
		}
		word := strings.ToLower(a.Text)
		if unit, ok := expiryTokens[word]; ok && i+1 < len(c.Args) {
			return expiry{set: true, value: c.Args[i+1], unit: unit}
		}
		switch word {
		case "keepttl":
			e.keepTTL = true
		case "persist":
			return expiry{remove: true}
		}
	}
	if cmd.Name == "set" && !e.keepTTL {
		e.remove = true // a SET without an expiry option leaves the key without one
	}
	return e
}

// hasExpiryOptions reports whether cmd takes EX/PX/EXAT/PXAT (SET, GETEX).
func hasExpiryOptions(cmd *rediscmd.Command) bool { return cmd.HasToken("PX") && cmd.HasToken("EXAT") }

// keyUse is one call's use of one KEYS position.
type keyUse struct {
	call    luascript.Call
	cmd     *rediscmd.Command
	creates bool
	expiry  expiry
}

// checkTTLs checks the expiry and bounds of every key a script may write:
// every key with a TTL rule that a call may create gets its expiry in the
// script (a call's own EX/PX or an EXPIRE of it), a literal TTL agrees with
// the key's rule, no expiry goes onto a key declared ttl none, and no trim
// keeps more than a list's or stream's max_len. It returns the problems and
// what it could not tell (lint's ttl-unproven and bound-unproven).
func checkTTLs(s *keyspec.Script, info *luascript.Info, cmds []*rediscmd.Command, display string) (problems, unproven []Problem) {
	at := func(line int) keyspec.Pos { return keyspec.Pos{File: display, Line: line} }
	bad := func(rule string, line int, format string, a ...any) {
		problems = append(problems, Problem{Rule: rule, Err: &keyspec.Error{Pos: at(line), Msg: fmt.Sprintf(format, a...)}})
	}
	unsure := func(rule string, line int, format string, a ...any) {
		unproven = append(unproven, Problem{Rule: rule, Err: &keyspec.Error{Pos: at(line), Msg: fmt.Sprintf(format, a...)}})
	}
	uses := map[*keyspec.ScriptKey][]keyUse{}
	read := map[*keyspec.ScriptKey]bool{} // positions some call reads
	var dynamic []keyUse                  // uses through KEYS[i], i not a literal
	for i, c := range info.Calls {
		cmd := cmds[i]
		if cmd == nil || keyspec.NeverGranted(cmd) != "" || cmd.HasToken("DB") {
			continue // checkCall refuses it
		}
		keys, err := cmd.StaticKeyPositions(StaticArgs(c.Args))
		if err != nil {
			continue // checkCall refuses it
		}
		for _, k := range keys {
			a := c.Args[k.Pos]
			if a.Kind != luascript.ArgKey {
				continue
			}
			if !cmd.Has(rediscmd.FlagWrite) {
				// A read (GET, EXISTS, PEXPIRETIME, ...): the script may go on
				// to write the key only when it found it.
				if pos := s.KeyAt(a.Key); pos != nil && a.Key > 0 {
					read[pos] = true
				}
				continue
			}
			u := keyUse{call: c, cmd: cmd, creates: mayCreate(cmd, c, k.Flags), expiry: expiryOf(cmd, c, k.Pos)}
			if a.Key == 0 {
				dynamic = append(dynamic, u)
				continue
			}
			if pos := s.KeyAt(a.Key); pos != nil {
				uses[pos] = append(uses[pos], u)
			}
		}
		checkBound(s, c, cmd, bad, unsure)
	}
	for i, pos := range s.Keys {
		ttlKeys, kept := splitByTTL(pos)
		var creator *keyUse
		expires := false
		for j, u := range uses[pos] {
			if u.creates && creator == nil {
				creator = &uses[pos][j]
			}
			if u.expiry.set {
				expires = true
				for _, k := range kept {
					bad(RuleTTL, u.call.Line, "%s sets an expiry on KEYS[%d] %q, but key %q is declared ttl none (%s): it would vanish; drop the expiry, or declare the key's TTL rule", u.cmd.Display(), i+1, pos.Name, k.Name, k.TTL.Reason)
				}
				for _, k := range ttlKeys {
					if msg := ttlMismatch(s, k, u.expiry); msg != "" {
						bad(RuleTTL, u.call.Line, "%s on KEYS[%d] %q: %s", u.cmd.Display(), i+1, pos.Name, msg)
					}
				}
			}
			if u.expiry.remove && !u.expiry.set && len(ttlKeys) > 0 && u.cmd.Name != "set" && !allPersist(ttlKeys) {
				bad(RuleTTL, u.call.Line, "%s removes the expiry of KEYS[%d] %q, whose key %q declares ttl %s: the key would never expire", u.cmd.Display(), i+1, pos.Name, ttlKeys[0].Name, ttlKeys[0].TTL.Rule)
			}
		}
		switch {
		case creator == nil || expires || len(ttlKeys) == 0 || pos.NeverCreates:
		case read[pos]:
			// It may write the key only once it has read that it exists:
			// only the run-time check can tell.
			unsure(RuleTTLUnproven, creator.call.Line, "%s may create KEYS[%d] %q (key %q, ttl %s) and the script never sets its expiry; it reads the key too, so it may write it only when it exists, which the static reading cannot tell: declare creates: false on the position if it never creates the key (the harness checks that at run time), or set its expiry", creator.cmd.Display(), i+1, pos.Name, ttlKeys[0].Name, ttlKeys[0].TTL.Rule)
		default:
			how := "PEXPIRE it, or set it with SET ... PX"
			if creator.expiry.keepTTL {
				how = "SET ... KEEPTTL gives a new key none: add XX (never create it) or PEXPIRE it"
			}
			bad(RuleTTL, creator.call.Line, "%s may create KEYS[%d] %q (key %q, ttl %s), and the script never sets its expiry: %s", creator.cmd.Display(), i+1, pos.Name, ttlKeys[0].Name, ttlKeys[0].TTL.Rule, how)
		}
	}
	for _, u := range dynamic {
		if !u.creates || u.expiry.set {
			continue
		}
		for i, pos := range s.Keys {
			if ttlKeys, _ := splitByTTL(pos); len(ttlKeys) > 0 && !pos.NeverCreates {
				unsure(RuleTTLUnproven, u.call.Line, "%s may create KEYS[...] (an index that is not a literal), which may be KEYS[%d] %q (key %q, ttl %s): the static reading cannot tell whether the script sets its expiry; the harness checks it at run time", u.cmd.Display(), i+1, pos.Name, ttlKeys[0].Name, ttlKeys[0].TTL.Rule)
				break
			}
		}
	}
	return problems, unproven
}

// allPersist reports whether every key may have its TTL removed (ttl
// persist: the caller may keep it until it is deleted).
func allPersist(keys []*keyspec.Key) bool {
	for _, k := range keys {
		if k.TTL.Persist == "" {
			return false
		}
	}
	return true
}

// splitByTTL splits a position's keys into those with a TTL rule and those
// declared ttl none.
func splitByTTL(pos *keyspec.ScriptKey) (ttl, none []*keyspec.Key) {
	for _, k := range pos.OneOf {
		if k.Expires() {
			ttl = append(ttl, k)
		} else {
			none = append(none, k)
		}
	}
	return ttl, none
}

// ttlMismatch says how an expiry a call sets disagrees with key k's TTL rule,
// or "": a literal relative TTL must be the fixed or heartbeat value, or at
// most a clamped TTL's max; an argument filled from a key's TTL (ttl_of)
// must be this key's, in the command's unit.
func ttlMismatch(s *keyspec.Script, k *keyspec.Key, e expiry) string {
	v := e.value
	if e.unit == 0 {
		return "" // an absolute time: only the run-time check can compare it
	}
	switch v.Kind {
	case luascript.ArgInteger:
		n, err := strconv.ParseInt(v.Text, 10, 64)
		if err != nil || n <= 0 {
			return fmt.Sprintf("an expiry of %s: Redis deletes the key at once (a TTL is positive)", v.Text)
		}
		d := time.Duration(n) * e.unit
		switch k.TTL.Rule {
		case keyspec.TTLFixed, keyspec.TTLHeartbeat:
			if d != k.TTL.Value {
				return fmt.Sprintf("an expiry of %s, but key %q declares ttl %s %s", d, k.Name, k.TTL.Rule, k.TTL.Value)
			}
		case keyspec.TTLClamped:
			if d > k.TTL.Max {
				return fmt.Sprintf("an expiry of %s, above key %q's clamped max %s", d, k.Name, k.TTL.Max)
			}
		}
	case luascript.ArgArgv:
		arg := s.ArgAt(v.Argv)
		switch {
		case arg == nil || v.Argv == 0:
		case arg.Type == keyspec.ArgDurationMS && e.unit == time.Second:
			return fmt.Sprintf("ARGV[%d] %q is a duration the wrapper sends in milliseconds, and this expiry is in seconds: use the millisecond form (PEXPIRE, PX)", v.Argv, arg.Name)
		case arg.TTLOf != nil && arg.TTLOf != k && !sameTTL(arg.TTLOf.TTL, k.TTL):
			return fmt.Sprintf("ARGV[%d] %q is key %q's TTL (ttl %s %s), but key %q declares ttl %s %s", v.Argv, arg.Name, arg.TTLOf.Name, arg.TTLOf.TTL.Rule, arg.TTLOf.TTL.Value, k.Name, k.TTL.Rule, k.TTL.Value)
		}
	}
	return ""
}

// sameTTL reports whether two TTL rules give one expiry.
func sameTTL(a, b keyspec.TTL) bool { return a.Rule == b.Rule && a.Value == b.Value }

// checkBound checks one call that trims a list or stream of the script
// against the key's max_len: XADD and XTRIM with MAXLEN, LTRIM.
func checkBound(s *keyspec.Script, c luascript.Call, cmd *rediscmd.Command, bad, unsure func(rule string, line int, format string, a ...any)) {
	if len(c.Args) < 2 || c.Args[1].Kind != luascript.ArgKey {
		return
	}
	pos := s.KeyAt(c.Args[1].Key)
	if pos == nil {
		return
	}
	var bounded *keyspec.Key
	for _, k := range pos.OneOf {
		if k.MaxLen > 0 && (k.Holds(keyspec.ValueList) || k.Holds(keyspec.ValueStream)) && (bounded == nil || k.MaxLen < bounded.MaxLen) {
			bounded = k
		}
	}
	if bounded == nil {
		return
	}
	switch cmd.Name {
	case "xadd", "xtrim":
		for i := 2; i+1 < len(c.Args); i++ {
			if a := c.Args[i]; a.Kind != luascript.ArgString || !strings.EqualFold(a.Text, "maxlen") {
				continue
			}
			n := c.Args[i+1]
			if n.Kind == luascript.ArgString && (n.Text == "~" || n.Text == "=") && i+2 < len(c.Args) {
				n = c.Args[i+2]
			}
			switch kept, known := countOf(s, n); {
			case known && kept > int64(bounded.MaxLen):
				bad(RuleBound, c.Line, "%s ... MAXLEN %s keeps up to %d entries of KEYS[%d] %q, above key %q's max_len %d", cmd.Display(), n.Desc, kept, c.Args[1].Key, pos.Name, bounded.Name, bounded.MaxLen)
			case !known:
				unsure(RuleBoundUnproven, c.Line, "%s ... MAXLEN %s: the static reading cannot tell whether it keeps at most key %q's max_len %d (pass an ARGV with max_len_of: %s)", cmd.Display(), n.Desc, bounded.Name, bounded.MaxLen, bounded.Name)
			}
			return
		}
	case "ltrim":
		if len(c.Args) < 4 {
			return
		}
		start, okStart := countOf(s, c.Args[2])
		stop, okStop := countOf(s, c.Args[3])
		if !okStart || !okStop {
			unsure(RuleBoundUnproven, c.Line, "LTRIM %s %s: the static reading cannot tell whether it keeps at most key %q's max_len %d", c.Args[2].Desc, c.Args[3].Desc, bounded.Name, bounded.MaxLen)
			return
		}
		switch kept, known := ltrimKeeps(start, stop); {
		case !known:
			bad(RuleBound, c.Line, "LTRIM %d %d keeps a number of elements that depends on the list's length (a start from the head and a stop from the tail), not at most key %q's max_len %d: use LTRIM 0 %d or LTRIM -%d -1", start, stop, bounded.Name, bounded.MaxLen, bounded.MaxLen-1, bounded.MaxLen)
		case kept > int64(bounded.MaxLen):
			bad(RuleBound, c.Line, "LTRIM %d %d keeps %d elements of KEYS[%d] %q, above key %q's max_len %d", start, stop, kept, c.Args[1].Key, pos.Name, bounded.Name, bounded.MaxLen)
		}
	}
}

// countOf is the value of a trim argument when the reading knows it: an
// integer literal, or an ARGV filled with a key's max_len (max_len_of) or an
// int argument's declared max.
func countOf(s *keyspec.Script, a luascript.Arg) (int64, bool) {
	switch a.Kind {
	case luascript.ArgInteger, luascript.ArgString:
		n, err := strconv.ParseInt(a.Text, 10, 64)
		return n, err == nil
	case luascript.ArgArgv:
		arg := s.ArgAt(a.Argv)
		if arg == nil || a.Argv == 0 {
			return 0, false
		}
		switch {
		case arg.MaxLenOf != nil:
			return int64(arg.MaxLenOf.MaxLen), true
		case arg.Type == keyspec.ArgInt && arg.Repeat == nil:
			return arg.Max, true
		}
	}
	return 0, false
}

// ltrimKeeps is how many elements LTRIM start stop keeps at most, when that
// does not depend on the list's length.
func ltrimKeeps(start, stop int64) (int64, bool) {
	if (start < 0) != (stop < 0) {
		return 0, false
	}
	if stop < start {
		return 0, true
	}
	return stop - start + 1, true
}
