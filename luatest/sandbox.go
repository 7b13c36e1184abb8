package luatest

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"math"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/hanchat/luagen/gen/rediscmd"
)

// Sizes of a script's Lua state. Redis lets Lua calls nest 19998 deep
// (LUAI_MAXCALLS); here 3999 calls fit and one more is a "stack overflow", as
// there: gopher-lua's handling of a stack overflow takes time quadratic in the
// depth (two seconds at Redis's depth, a minute under the race detector).
const (
	callStackSize    = 4000
	registrySize     = 1024 * 8
	registryMaxSize  = 1024 * 1024
	registryGrowStep = 1024
	// maxCStack is Lua 5.1's LUAI_MAXCSTACK: the most values a C function
	// (unpack) may push.
	maxCStack = 8000
)

// Values of the redis table, as in Redis 7.0.15.
const (
	redisVersion    = "7.0.15"
	redisVersionNum = 0x07000f
)

// baseGlobals are the base-library globals Redis 7.0.15 gives a script (its allow
// list, minus print, getfenv, setfenv and newproxy, which it removes too).
var baseGlobals = []string{
	"assert", "collectgarbage", "error", "gcinfo", "getmetatable", "ipairs", "load",
	"loadstring", "next", "pairs", "pcall", "rawequal", "rawget", "rawset", "select",
	"setmetatable", "tonumber", "tostring", "type", "unpack", "xpcall", "_VERSION",
}

const readonlyMsg = "Attempt to modify a readonly table"

func nonexistentGlobal(L *lua.LState) int {
	switch k := L.Get(2).(type) {
	case lua.LString:
		L.RaiseError("Script attempted to access nonexistent global variable '%s'", string(k))
	case lua.LNumber:
		L.RaiseError("Script attempted to access nonexistent global variable '%s'", formatLuaNumber(float64(k)))
	default:
		L.RaiseError("Second argument to luaProtectedTableError must be a string or number")
	}
	return 0
}

// raise raises a Lua error without position information, as lua_error does
// from C.
func raise(L *lua.LState, msg string) {
	L.Error(lua.LString(msg), 0)
}

// raiseReply raises an error table {err=msg}, as Redis's luaPushError+luaError.
func raiseReply(L *lua.LState, msg string) {
	L.Error(errorTable(L, msg), 0)
}

func (vm *luaVM) next(L *lua.LState) int {
	t := L.CheckTable(1)
	L.SetTop(2)
	L.Push(vm.orig["next"])
	L.Push(vm.shown(t))
	L.Push(L.Get(2))
	L.Call(2, lua.MultRet)
	return L.GetTop() - 2
}

func (vm *luaVM) pairs(L *lua.LState) int {
	t := L.CheckTable(1)
	L.Push(vm.orig["next"])
	L.Push(vm.shown(t))
	L.Push(lua.LNil)
	return 3
}

func (vm *luaVM) rawget(L *lua.LState) int {
	t := L.CheckTable(1)
	k := L.CheckAny(2)
	L.Push(vm.shown(t).(*lua.LTable).RawGet(k))
	return 1
}

func (vm *luaVM) rawset(L *lua.LState) int {
	t := L.CheckTable(1)
	L.CheckAny(2)
	L.CheckAny(3)
	if vm.isProxy(t) {
		raise(L, readonlyMsg)
	}
	t.RawSet(L.Get(2), L.Get(3))
	L.Push(t)
	return 1
}

func (vm *luaVM) setmetatable(L *lua.LState) int {
	if vm.isProxy(L.Get(1)) {
		raise(L, readonlyMsg)
	}
	L.Push(vm.orig["setmetatable"])
	L.Push(L.Get(1))
	L.Push(L.Get(2))
	L.Call(2, 1)
	return 1
}

// getmetatable shows a protected metatable (of the globals, of strings) through
// its read-only proxy, and the metatable of a read-only table as that of the
// table it shows.
func (vm *luaVM) getmetatable(L *lua.LState) int {
	v := vm.shown(L.CheckAny(1))
	mt := L.GetMetatable(v)
	if t, ok := mt.(*lua.LTable); ok {
		if vm.hidden[t] {
			L.Push(lua.LNil)
			return 1
		}
		if p, ok := vm.views[t]; ok {
			L.Push(p)
			return 1
		}
		if f := t.RawGetString("__metatable"); f != lua.LNil {
			L.Push(f)
			return 1
		}
	}
	L.Push(mt)
	return 1
}

// tableInsert is Lua 5.1's table.insert, refusing a read-only table as
// Redis's lua_rawseti does.
func (vm *luaVM) tableInsert(L *lua.LState) int {
	t := L.CheckTable(1)
	e := t.Len() + 1
	var pos int
	switch L.GetTop() {
	case 2:
		pos = e
	case 3:
		pos = luaInt(L, 2)
		if pos > e {
			e = pos
		}
		if vm.isProxy(t) && e > pos {
			raise(L, readonlyMsg)
		}
		for i := e; i > pos; i-- {
			t.RawSetInt(i, t.RawGetInt(i-1))
		}
	default:
		raise(L, "wrong number of arguments to 'insert'")
	}
	if vm.isProxy(t) {
		raise(L, readonlyMsg)
	}
	t.RawSetInt(pos, L.Get(L.GetTop()))
	return 0
}

// luaCallError is the __call of values that are not functions: Lua 5.1's
// error for calling one, with the position of the Lua code that called it.
func luaCallError(L *lua.LState) int {
	raise(L, where(L, 1)+"attempt to call a "+luaTypeName(L.Get(1))+" value")
	return 0
}

// maxCCalls is Lua 5.1's LUAI_MAXCCALLS: calls from C (pcall, xpcall) into
// Lua may nest 200 deep, the script's own call included.
const maxCCalls = 200

// enterC counts one more nested pcall or xpcall; at Lua 5.1's limit it
// answers false, "C stack overflow" (as pcall returns it) and false.
func (vm *luaVM) enterC(L *lua.LState) bool {
	if vm.cCalls+1 >= maxCCalls {
		L.SetTop(0)
		L.Push(lua.LFalse)
		L.Push(lua.LString("C stack overflow"))
		return false
	}
	vm.cCalls++
	return true
}

func (vm *luaVM) leaveC() { vm.cCalls-- }

// xpcall is gopher-lua's xpcall within Lua 5.1's nesting limit.
func (vm *luaVM) xpcall(L *lua.LState) int {
	if !vm.enterC(L) {
		return 2
	}
	defer vm.leaveC()
	top := L.GetTop()
	L.Insert(vm.orig["xpcall"], 1)
	L.Call(top, lua.MultRet)
	return L.GetTop()
}

// luaLenError is the __len of values # does not apply to: Lua 5.1's text.
func luaLenError(L *lua.LState) int {
	raise(L, where(L, 1)+"attempt to get length of a "+luaTypeName(L.Get(1))+" value")
	return 0
}

// luaUnmError is the __unm of values unary minus does not apply to; a
// string that reads as a number (Lua 5.1's conversion) is negated.
func luaUnmError(L *lua.LState) int {
	if s, ok := L.Get(1).(lua.LString); ok {
		if n, ok := luaNumber(s); ok {
			L.Push(lua.LNumber(-n))
			return 1
		}
	}
	raise(L, where(L, 1)+"attempt to perform arithmetic on a "+luaTypeName(L.Get(1))+" value")
	return 0
}

// redisPcall is Redis 7.0's pcall: an error table with an err field is caught as
// the err string.
func (vm *luaVM) redisPcall(L *lua.LState) int {
	if !vm.enterC(L) {
		return 2
	}
	defer vm.leaveC()
	if L.GetTop() == 0 {
		// Redis's pcall calls its placeholder result, true, here.
		L.Push(lua.LFalse)
		L.Push(lua.LString("attempt to call a boolean value"))
		return 2
	}
	fn := L.Get(1)
	if fn.Type() != lua.LTFunction && L.GetMetaField(fn, "__call").Type() != lua.LTFunction {
		L.SetTop(0)
		L.Push(lua.LFalse)
		L.Push(lua.LString("attempt to call a " + fn.Type().String() + " value"))
		return 2
	}
	if err := L.PCall(L.GetTop()-1, lua.MultRet, nil); err != nil {
		var obj lua.LValue = lua.LString(err.Error())
		if aerr, ok := err.(*lua.ApiError); ok && aerr.Object != nil {
			obj = aerr.Object
		}
		switch o := obj.(type) {
		case *lua.LTable:
			switch e := L.GetField(o, "err").(type) {
			case lua.LString, lua.LNumber:
				obj = e
			}
		case lua.LString:
			obj = lua.LString(lua51Message(string(o)))
		}
		L.Push(lua.LFalse)
		L.Push(obj)
		return 2
	}
	L.Insert(lua.LTrue, 1)
	return L.GetTop()
}

// luaTostring is tostring with Lua 5.1's "%.14g" for numbers.
func luaTostring(L *lua.LState) int {
	v := L.CheckAny(1)
	L.Push(lua.LString(luaToString(L, v)))
	return 1
}

// luaError is Lua 5.1's error(): a string (or number) message gets the position
// of the function at level, when that is a Lua function, as luaL_where gives it.
func luaError(L *lua.LState) int {
	obj := L.Get(1)
	level := L.OptInt(2, 1)
	msg, ok := luaStringOrNumber(obj)
	if !ok {
		L.Error(obj, 0)
		return 0
	}
	if level > 0 {
		msg = where(L, level) + msg
	}
	raise(L, msg)
	return 0
}

// where is luaL_where: "chunk:line: " for a Lua function at level, else "".
func where(L *lua.LState, level int) string {
	dbg, ok := L.GetStack(level)
	if !ok {
		return ""
	}
	if _, err := L.GetInfo("Sl", dbg, lua.LNil); err != nil || dbg.CurrentLine <= 0 {
		return ""
	}
	return fmt.Sprintf("%s:%d: ", dbg.Source, dbg.CurrentLine)
}

// luaUnpack is Lua 5.1's unpack, with its limit on the number of results.
func luaUnpack(L *lua.LState) int {
	t := L.CheckTable(1)
	i := L.OptInt(2, 1)
	e := t.Len()
	if L.Get(3) != lua.LNil {
		e = L.CheckInt(3)
	}
	if i > e {
		return 0
	}
	n := e - i + 1
	if n <= 0 || n+L.GetTop() > maxCStack {
		L.RaiseError("too many results to unpack")
	}
	for k := i; k <= e; k++ {
		L.Push(t.RawGetInt(k))
	}
	return n
}

// luaSelect is Lua 5.1's select, negative indexes included.
func luaSelect(L *lua.LState) int {
	n := L.GetTop()
	if s, ok := L.Get(1).(lua.LString); ok && strings.HasPrefix(string(s), "#") {
		L.Push(lua.LNumber(n - 1))
		return 1
	}
	i := L.CheckInt(1)
	if i < 0 {
		i = n + i
	} else if i > n {
		i = n
	}
	if i < 1 {
		L.ArgError(1, "index out of range")
	}
	return n - i
}

// luaTonumber is Lua 5.1's tonumber: strtod for base 10 (gopher-lua's own
// refuses "5e2"), strtoul for other bases.
func luaTonumber(L *lua.LState) int {
	v := L.CheckAny(1)
	if b := L.Get(2); b == lua.LNil || b == lua.LNumber(10) {
		switch v := v.(type) {
		case lua.LNumber:
			L.Push(v)
		case lua.LString:
			if n, err := parseLuaNumber(string(v)); err == nil {
				L.Push(lua.LNumber(n))
			} else {
				L.Push(lua.LNil)
			}
		default:
			L.Push(lua.LNil)
		}
		return 1
	}
	base := L.CheckInt(2)
	if base < 2 || base > 36 {
		L.ArgError(2, "base out of range")
	}
	s, ok := luaStringOrNumber(v)
	if !ok {
		L.ArgError(1, "string expected, got "+v.Type().String())
	}
	if n, ok := strtoul(s, base); ok {
		L.Push(lua.LNumber(n))
	} else {
		L.Push(lua.LNil)
	}
	return 1
}

// strtoul parses s in base as C's strtoul does, requiring (like tonumber) that
// only spaces follow the digits.
func strtoul(s string, base int) (float64, bool) {
	t := strings.TrimLeft(s, " \t\n\v\f\r")
	neg := false
	if t != "" && (t[0] == '-' || t[0] == '+') {
		neg = t[0] == '-'
		t = t[1:]
	}
	if base == 16 && len(t) > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X') {
		t = t[2:]
	}
	var n uint64
	digits := 0
	for digits < len(t) {
		c := t[digits]
		var d int
		switch {
		case c >= '0' && c <= '9':
			d = int(c - '0')
		case c >= 'a' && c <= 'z':
			d = int(c-'a') + 10
		case c >= 'A' && c <= 'Z':
			d = int(c-'A') + 10
		default:
			d = 99
		}
		if d >= base {
			break
		}
		if n > (math.MaxUint64-uint64(d))/uint64(base) {
			n = math.MaxUint64 // strtoul saturates
		} else {
			n = n*uint64(base) + uint64(d)
		}
		digits++
	}
	if digits == 0 || strings.TrimLeft(t[digits:], " \t\n\v\f\r") != "" {
		return 0, false
	}
	if neg {
		n = -n
	}
	return float64(n), true
}

// loadstring is Lua 5.1's: the chunk is named after its source.
func (vm *luaVM) loadstring(L *lua.LState) int {
	src := L.CheckString(1)
	return vm.loadChunk(L, src, L.OptString(2, src))
}

// load is Lua 5.1's: it reads the chunk from a function; the default name is "=(load)".
func (vm *luaVM) load(L *lua.LState) int {
	fn := L.CheckFunction(1)
	name := L.OptString(2, "=(load)")
	var buf strings.Builder
	for {
		L.Push(fn)
		L.Call(0, 1)
		piece := L.Get(-1)
		L.Pop(1)
		if piece == lua.LNil {
			break
		}
		s, ok := luaStringOrNumber(piece)
		if !ok {
			L.Push(lua.LNil)
			L.Push(lua.LString("reader function must return a string"))
			return 2
		}
		if s == "" {
			break
		}
		buf.WriteString(s)
	}
	return vm.loadChunk(L, buf.String(), name)
}

func (vm *luaVM) loadChunk(L *lua.LState, src, chunkname string) int {
	display := chunkID(chunkname)
	vm.sources[display] = chunkname
	if strings.HasPrefix(src, lua51Signature) {
		// Redis 7.0's loadstring takes text only: a precompiled chunk (what
		// string.dump gives) is parsed as text and fails on its first byte.
		L.Push(lua.LNil)
		L.Push(lua.LString(display + ":1: unexpected symbol near 'char(27)'"))
		return 2
	}
	fn, err := L.Load(strings.NewReader(src), display)
	if err != nil {
		L.Push(lua.LNil)
		L.Push(lua.LString(err.Error()))
		return 2
	}
	L.Push(fn)
	return 1
}

// chunkID is Lua 5.1's luaO_chunkid: how a chunk name shows in messages. The
// name is a C string: it ends at the first NUL.
func chunkID(source string) string {
	const idSize = 60
	if i := strings.IndexByte(source, 0); i >= 0 {
		source = source[:i]
	}
	switch {
	case strings.HasPrefix(source, "="):
		return truncate(source[1:], idSize-1)
	case strings.HasPrefix(source, "@"):
		s := source[1:]
		room := idSize - len(" '...' ") - 1
		if len(s) > room {
			return "..." + s[len(s)-room:]
		}
		return s
	}
	room := idSize - len(` [string "..."] `) - 1
	n := strings.IndexAny(source, "\n\r")
	if n < 0 {
		n = len(source)
	}
	if n > room {
		n = room
	}
	if n < len(source) {
		return `[string "` + source[:n] + `..."]`
	}
	return `[string "` + source + `"]`
}

// lua51Signature starts every precompiled Lua chunk (LUA_SIGNATURE).
const lua51Signature = "\x1bLua"

// lua51Header is the header of a chunk Lua 5.1 dumps on x86-64: signature,
// version 5.1, official format, little endian, sizes of int, size_t,
// Instruction and lua_Number, floating-point numbers.
const lua51Header = lua51Signature + "\x51\x00\x01\x04\x08\x04\x08\x00"

// stringDump is string.dump: a Lua function gives a binary chunk (Lua 5.1's
// header followed by gopher-lua's listing of the function, which no loader
// here or in Redis accepts); a Go function cannot be dumped, as a C function
// cannot in Lua 5.1.
func stringDump(L *lua.LState) int {
	fn := L.CheckFunction(1)
	if fn.IsG {
		raise(L, "unable to dump given function")
	}
	L.Push(lua.LString(lua51Header + fn.Proto.String()))
	return 1
}

func luaCollectGarbage(L *lua.LState) int {
	switch L.OptString(1, "collect") {
	case "count":
		L.Push(lua.LNumber(0))
	case "step":
		L.Push(lua.LTrue)
	case "setpause", "setstepmul":
		L.Push(lua.LNumber(200))
	default:
		L.Push(lua.LNumber(0))
	}
	return 1
}

func luaGcinfo(L *lua.LState) int {
	L.Push(lua.LNumber(0))
	return 1
}

func tableForeach(L *lua.LState) int {
	t := L.CheckTable(1)
	f := L.CheckFunction(2)
	var result lua.LValue = lua.LNil
	k, v := t.Next(lua.LNil)
	for k != lua.LNil {
		L.Push(f)
		L.Push(k)
		L.Push(v)
		L.Call(2, 1)
		if result = L.Get(-1); result != lua.LNil {
			return 1
		}
		L.Pop(1)
		k, v = t.Next(k)
	}
	return 0
}

func tableForeachi(L *lua.LState) int {
	t := L.CheckTable(1)
	f := L.CheckFunction(2)
	n := t.Len()
	for i := 1; i <= n; i++ {
		L.Push(f)
		L.Push(lua.LNumber(i))
		L.Push(t.RawGetInt(i))
		L.Call(2, 1)
		if L.Get(-1) != lua.LNil {
			return 1
		}
		L.Pop(1)
	}
	return 0
}

func tableSetn(L *lua.LState) int {
	L.RaiseError("'setn' is obsolete")
	return 0
}

// ---- the redis table ----

func (vm *luaVM) redisTable(L *lua.LState) *lua.LTable {
	t := L.NewTable()
	fns := map[string]lua.LGFunction{
		"call":               func(L *lua.LState) int { return vm.run.redisCall(L, true) },
		"pcall":              func(L *lua.LState) int { return vm.run.redisCall(L, false) },
		"error_reply":        redisErrorReply,
		"status_reply":       redisStatusReply,
		"sha1hex":            redisSha1hex,
		"log":                func(L *lua.LState) int { return vm.run.redisLog(L) },
		"setresp":            redisSetresp,
		"set_repl":           redisSetRepl,
		"replicate_commands": func(L *lua.LState) int { L.Push(lua.LTrue); return 1 },
		"breakpoint":         func(L *lua.LState) int { L.Push(lua.LFalse); return 1 },
		"debug":              func(L *lua.LState) int { return 0 },
		"acl_check_cmd":      redisACLCheckCmd,
	}
	for name, fn := range fns {
		t.RawSetString(name, L.NewFunction(fn))
	}
	for name, v := range map[string]int{
		"LOG_DEBUG": 0, "LOG_VERBOSE": 1, "LOG_NOTICE": 2, "LOG_WARNING": 3,
		"REPL_NONE": 0, "REPL_AOF": 1, "REPL_SLAVE": 2, "REPL_REPLICA": 2, "REPL_ALL": 3,
		"REDIS_VERSION_NUM": redisVersionNum,
	} {
		t.RawSetString(name, lua.LNumber(v))
	}
	t.RawSetString("REDIS_VERSION", lua.LString(redisVersion))
	return t
}

// redisCall is redis.call (raise) and redis.pcall.
func (r *runState) redisCall(L *lua.LState, raise bool) int {
	if dbg, ok := L.GetStack(1); ok {
		if _, err := L.GetInfo("l", dbg, lua.LNil); err == nil {
			r.line = dbg.CurrentLine
		}
	}
	argv, bad := luaArgs(L)
	var rep reply
	if bad != "" {
		rep = bad
	} else {
		rep = r.exec(argv)
	}
	if e, ok := rep.(errReply); ok {
		if raise {
			raiseReply(L, string(e))
		}
		L.Push(errorTable(L, string(e)))
		return 1
	}
	L.Push(replyToLua(L, rep))
	return 1
}

func redisErrorReply(L *lua.LState) int {
	s, ok := L.Get(1).(lua.LString)
	if L.GetTop() != 1 || !ok {
		L.Push(errorTable(L, "ERR wrong number or type of arguments"))
		return 1
	}
	L.Push(errorTable(L, errorCodeText(strings.TrimPrefix(string(s), "-"))))
	return 1
}

// errorCodeText is Redis's luaPushErrorBuff: "CODE msg" stays, a message with
// no space gets the ERR code, and CR/LF around the message go.
func errorCodeText(s string) string {
	code, msg, ok := strings.Cut(s, " ")
	if !ok {
		code, msg = "ERR", s
	}
	return code + " " + strings.Trim(msg, "\r\n")
}

func redisStatusReply(L *lua.LState) int {
	s, ok := L.Get(1).(lua.LString)
	if L.GetTop() != 1 || !ok {
		L.Push(errorTable(L, "ERR wrong number or type of arguments"))
		return 1
	}
	t := L.NewTable()
	t.RawSetString("ok", s)
	L.Push(t)
	return 1
}

func redisSha1hex(L *lua.LState) int {
	if L.GetTop() != 1 {
		raiseReply(L, "ERR wrong number of arguments")
	}
	s, _ := luaStringOrNumber(L.Get(1))
	sum := sha1.Sum([]byte(s))
	L.Push(lua.LString(hex.EncodeToString(sum[:])))
	return 1
}

// luaNumber is lua_isnumber + lua_tonumber: numbers and numeric strings.
func luaNumber(v lua.LValue) (float64, bool) {
	switch v := v.(type) {
	case lua.LNumber:
		return float64(v), true
	case lua.LString:
		n, err := parseLuaNumber(string(v))
		return n, err == nil
	}
	return 0, false
}

func (r *runState) redisLog(L *lua.LState) int {
	n := L.GetTop()
	if n < 2 {
		raiseReply(L, "ERR redis.log() requires two arguments or more.")
	}
	level, ok := luaNumber(L.Get(1))
	if !ok {
		raiseReply(L, "ERR First argument must be a number (log level).")
	}
	if lv := int(level); lv < 0 || lv > 3 {
		raiseReply(L, "ERR Invalid debug level.")
	}
	var parts []string
	for i := 2; i <= n; i++ {
		switch v := L.Get(i).(type) {
		case lua.LString:
			parts = append(parts, string(v))
		case lua.LNumber:
			parts = append(parts, formatLuaNumber(float64(v)))
		}
	}
	r.res.Logs = append(r.res.Logs, strings.Join(parts, " "))
	return 0
}

func redisSetresp(L *lua.LState) int {
	if L.GetTop() != 1 {
		raiseReply(L, "ERR redis.setresp() requires one argument.")
	}
	v, _ := luaNumber(L.Get(1))
	switch int(v) {
	case 2:
		return 0
	case 3:
		raiseReply(L, "ERR luatest: redis.setresp(3) is not supported by the harness (RESP2 only)")
	}
	raiseReply(L, "ERR RESP version must be 2 or 3.")
	return 0
}

func redisSetRepl(L *lua.LState) int {
	if L.GetTop() != 1 {
		raiseReply(L, "ERR redis.set_repl() requires two arguments.")
	}
	v, _ := luaNumber(L.Get(1))
	if int(v)&^3 != 0 {
		raiseReply(L, "ERR Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.")
	}
	return 0
}

func redisACLCheckCmd(L *lua.LState) int {
	argv, bad := luaArgs(L)
	if bad != "" {
		raiseReply(L, string(bad))
	}
	if _, err := rediscmd.Resolve(argv); err != nil {
		raiseReply(L, "ERR Invalid command passed to redis.acl_check_cmd()")
	}
	L.Push(lua.LTrue)
	return 1
}

// ---- math.random: Redis's rand48 ----

// rand48 is the lrand48 generator Redis gives math.random.
type rand48 struct{ x uint64 }

func (g *rand48) seed(s int32) { g.x = uint64(uint32(s))<<16 | 0x330e }

// reset puts the generator where a new redis-server's is (redisSrand48 never
// called: rand.c's X0, X1, X2).
func (g *rand48) reset() { g.x = 0x1234_abcd_330e }

func (g *rand48) next() int32 {
	g.x = (0x5deece66d*g.x + 0xb) & (1<<48 - 1)
	return int32(g.x >> 17)
}

// luaInt is luaL_checkint: a number (or numeric string) truncated to an int.
func luaInt(L *lua.LState, n int) int {
	v, ok := luaNumber(L.Get(n))
	if !ok {
		L.ArgError(n, "number expected, got "+L.Get(n).Type().String())
	}
	return int(int32(luaToInteger(v)))
}

func (g *rand48) luaRandom(L *lua.LState) int {
	const max = math.MaxInt32
	r := float64(g.next()%max) / float64(max)
	switch L.GetTop() {
	case 0:
		L.Push(lua.LNumber(r))
	case 1:
		u := luaInt(L, 1)
		if u < 1 {
			L.ArgError(1, "interval is empty")
		}
		L.Push(lua.LNumber(math.Floor(r*float64(u)) + 1))
	case 2:
		l, u := luaInt(L, 1), luaInt(L, 2)
		if l > u {
			L.ArgError(2, "interval is empty")
		}
		L.Push(lua.LNumber(math.Floor(r*float64(u-l+1)) + float64(l)))
	default:
		L.RaiseError("wrong number of arguments")
	}
	return 1
}

func (g *rand48) luaRandomseed(L *lua.LState) int {
	g.seed(int32(luaInt(L, 1)))
	return 0
}

func (vm *luaVM) mathRandom(L *lua.LState) int     { return vm.run.s.rand.luaRandom(L) }
func (vm *luaVM) mathRandomseed(L *lua.LState) int { return vm.run.s.rand.luaRandomseed(L) }
