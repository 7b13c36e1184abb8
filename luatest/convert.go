package luatest

import (
	"encoding"
	"fmt"
	"net"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// maxReplyDepth bounds the nesting of a Lua table converted to a reply. Redis
// answers "reached lua stack limit" when its Lua stack runs out (a table that
// contains itself); this limit is of the same order.
const maxReplyDepth = 2000

// luaArgs converts the arguments of redis.call/pcall into a command's argv, as
// Redis 7.0's luaArgsToRedisArgv does: strings as they are, numbers with
// "%.17g", anything else refused.
func luaArgs(L *lua.LState) ([]string, errReply) {
	n := L.GetTop()
	if n == 0 {
		return nil, "ERR Please specify at least one argument for this redis lib call"
	}
	argv := make([]string, n)
	for i := 1; i <= n; i++ {
		switch v := L.Get(i).(type) {
		case lua.LString:
			argv[i-1] = string(v)
		case lua.LNumber:
			argv[i-1] = formatArg(float64(v))
		default:
			return nil, "ERR Lua redis lib command arguments must be strings or integers"
		}
	}
	return argv, ""
}

// replyToLua converts a command's reply into the Lua value redis.call returns
// (redisProtocolToLuaType): integer → number, bulk → string, nil → false,
// status → {ok=...}, error → {err=...}, array → table (nil elements → false).
func replyToLua(L *lua.LState, r reply) lua.LValue {
	switch r := r.(type) {
	case intReply:
		return lua.LNumber(float64(r))
	case bulkReply:
		return lua.LString(r)
	case statusReply:
		t := L.NewTable()
		t.RawSetString("ok", lua.LString(r))
		return t
	case errReply:
		return errorTable(L, string(r))
	case arrayReply:
		t := L.CreateTable(len(r), 0)
		for i, e := range r {
			t.RawSetInt(i+1, replyToLua(L, e))
		}
		return t
	}
	return lua.LFalse
}

func errorTable(L *lua.LState, msg string) *lua.LTable {
	t := L.NewTable()
	t.RawSetString("err", lua.LString(msg))
	return t
}

// mapNewlines replaces CR and LF with spaces, as Redis does to the text of
// status and error replies.
func mapNewlines(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\r' || r == '\n' {
			return ' '
		}
		return r
	}, s)
}

// luaToReply converts a Lua value into the reply Redis 7.0 sends for it
// (luaReplyToRedisReply), with a RESP2 client.
func luaToReply(v lua.LValue, depth int) reply {
	switch v := v.(type) {
	case lua.LString:
		return bulkReply(v)
	case lua.LBool:
		if v {
			return intReply(1)
		}
		return nilReply{}
	case lua.LNumber:
		return intReply(luaToInteger(float64(v)))
	case *lua.LTable:
		if depth >= maxReplyDepth {
			return errReply("ERR reached lua stack limit")
		}
		return tableToReply(v, depth+1)
	}
	return nilReply{}
}

func tableToReply(t *lua.LTable, depth int) reply {
	if s, ok := t.RawGetString("err").(lua.LString); ok {
		return errReply(mapNewlines(string(s)))
	}
	if s, ok := t.RawGetString("ok").(lua.LString); ok {
		return statusReply(mapNewlines(string(s)))
	}
	if n, ok := t.RawGetString("double").(lua.LNumber); ok {
		return bulkReply(formatScore(float64(n)))
	}
	if s, ok := t.RawGetString("big_number").(lua.LString); ok {
		return bulkReply(mapNewlines(string(s)))
	}
	if m, ok := t.RawGetString("map").(*lua.LTable); ok {
		out := arrayReply{}
		forEachInOrder(m, func(k, v lua.LValue) {
			out = append(out, luaToReply(k, depth), luaToReply(v, depth))
		})
		return out
	}
	if m, ok := t.RawGetString("set").(*lua.LTable); ok {
		out := arrayReply{}
		forEachInOrder(m, func(k, _ lua.LValue) {
			out = append(out, luaToReply(k, depth))
		})
		return out
	}
	if vt, ok := t.RawGetString("verbatim_string").(*lua.LTable); ok {
		if _, ok := vt.RawGetString("format").(lua.LString); ok {
			if s, ok := vt.RawGetString("string").(lua.LString); ok {
				return bulkReply(s)
			}
		}
	}
	out := arrayReply{}
	for i := 1; ; i++ {
		e := t.RawGetInt(i)
		if e == lua.LNil {
			break
		}
		out = append(out, luaToReply(e, depth))
	}
	return out
}

// replyToGo converts a reply into what go-redis (RESP2) gives a client: int64,
// string (bulk and status), nil, []any, and *ErrorReply for an error nested in an
// array. A top-level error is returned by the caller as an error instead.
func replyToGo(r reply) any { return replyValue(r, false) }

// replyToTyped is replyToGo keeping status replies apart from bulk strings.
func replyToTyped(r reply) any { return replyValue(r, true) }

// replyValue is replyToGo, with a status reply as a Status when typed.
func replyValue(r reply, typed bool) any {
	switch r := r.(type) {
	case intReply:
		return int64(r)
	case bulkReply:
		return string(r)
	case statusReply:
		if typed {
			return Status(r)
		}
		return string(r)
	case errReply:
		return &ErrorReply{Msg: string(r)}
	case arrayReply:
		out := make([]any, len(r))
		for i, e := range r {
			out[i] = replyValue(e, typed)
		}
		return out
	}
	return nil
}

// encodeArgs turns Go values into command arguments the way go-redis writes them.
func encodeArgs(args []any) ([]string, error) {
	out := make([]string, len(args))
	for i, a := range args {
		s, err := encodeArg(a)
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}

// encodeCommand is encodeArgs for a command, which needs at least its name;
// caller ("Do", "Call.Do") is named in the error for none.
func encodeCommand(args []any, caller string) ([]string, error) {
	argv, err := encodeArgs(args)
	if err == nil && len(argv) == 0 {
		err = fmt.Errorf("luatest: %s needs a command", caller)
	}
	return argv, err
}

func encodeArg(a any) (string, error) {
	switch v := a.(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	case []byte:
		return string(v), nil
	case int, int8, int16, int32, int64:
		return strconv.FormatInt(reflect.ValueOf(v).Int(), 10), nil
	case uint, uint8, uint16, uint32, uint64:
		return strconv.FormatUint(reflect.ValueOf(v).Uint(), 10), nil
	case float32:
		return strconv.FormatFloat(float64(v), 'f', -1, 64), nil
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), nil
	case bool:
		if v {
			return "1", nil
		}
		return "0", nil
	case time.Time:
		return v.Format(time.RFC3339Nano), nil
	case time.Duration:
		return strconv.FormatInt(v.Nanoseconds(), 10), nil
	case net.IP:
		return string(v), nil
	case encoding.BinaryMarshaler:
		b, err := v.MarshalBinary()
		if err != nil {
			return "", err
		}
		return string(b), nil
	}
	return "", fmt.Errorf("luatest: can't pass %T as a Redis argument (go-redis can't marshal it either)", a)
}

// luaToString is Lua 5.1's tostring for error messages: numbers with "%.14g".
func luaToString(L *lua.LState, v lua.LValue) string {
	if n, ok := v.(lua.LNumber); ok {
		return formatLuaNumber(float64(n))
	}
	if isNullPointer(v) {
		return "userdata: (nil)"
	}
	return L.ToStringMeta(v).String()
}

var (
	arithRe   = regexp.MustCompile(`^((?s:.*?):\d+: )?cannot perform (\w+) operation between (\w+) and (\w+)$`)
	indexRe   = regexp.MustCompile(`^((?s:.*?):\d+: )?attempt to index a non-table object\((\w+)\) with key '(?s:.*)'$`)
	compareRe = regexp.MustCompile(`^((?s:.*?):\d+: )?attempt to compare (\w+) with (\w+)$`)
	unmRe     = regexp.MustCompile(`^((?s:.*?):\d+: )?__unm undefined$`)
	callRe    = regexp.MustCompile(`^((?s:.*?):\d+: )?attempt to call a non-function object$`)
	badArgRe  = regexp.MustCompile(`^((?s:.*?):\d+: )?bad argument #(\d+) to ([^ ']+) \(`)
)

// lua51Message rewrites the commonest gopher-lua runtime error texts into Lua
// 5.1's wording (without the variable names Lua 5.1 sometimes adds).
func lua51Message(msg string) string {
	if m := arithRe.FindStringSubmatch(msg); m != nil {
		if m[2] == "concat" {
			culprit := m[3]
			if culprit == "string" || culprit == "number" {
				culprit = m[4]
			}
			return m[1] + "attempt to concatenate a " + culprit + " value"
		}
		culprit := m[3]
		if culprit == "number" {
			culprit = m[4]
		}
		return m[1] + "attempt to perform arithmetic on a " + culprit + " value"
	}
	if m := indexRe.FindStringSubmatch(msg); m != nil {
		return m[1] + "attempt to index a " + m[2] + " value"
	}
	if m := compareRe.FindStringSubmatch(msg); m != nil && m[2] == m[3] {
		return m[1] + "attempt to compare two " + m[2] + " values"
	}
	if m := unmRe.FindStringSubmatch(msg); m != nil {
		// Values of every other type have an __unm that raises Lua 5.1's text.
		return m[1] + "attempt to perform arithmetic on a table value"
	}
	if m := callRe.FindStringSubmatch(msg); m != nil {
		// Values of every other type have a __call that raises Lua 5.1's text.
		return m[1] + "attempt to call a table value"
	}
	return badArgRe.ReplaceAllString(msg, "${1}bad argument #${2} to '${3}' (")
}

// forEachInOrder calls fn for each entry of t in the order next and pairs
// give: the array part, then the other keys in the order they were added.
// (gopher-lua's ForEach walks Go maps, in an order that changes run to run.)
func forEachInOrder(t *lua.LTable, fn func(k, v lua.LValue)) {
	for k, v := t.Next(lua.LNil); k != lua.LNil; k, v = t.Next(k) {
		fn(k, v)
	}
}
