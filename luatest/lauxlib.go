package luatest

import (
	"fmt"

	lua "github.com/yuin/gopher-lua"
)

// Lua 5.1's auxiliary library (lauxlib.c) as the C libraries Redis bundles use
// it, for the Go functions that stand in for them: same argument checks, same
// messages, same positions.

// luaLError is luaL_error from a Go function: the message gets the position of
// the function that called it when that is a Lua function (luaL_where(L, 1)).
func luaLError(L *lua.LState, format string, args ...any) {
	raise(L, where(L, 1)+fmt.Sprintf(format, args...))
}

// luaLArgError is luaL_argerror: "bad argument #n to 'name' (msg)", the name
// being how the calling Lua code named the function ("?" when a Go function
// such as pcall called it).
func luaLArgError(L *lua.LState, narg int, msg string) {
	luaLError(L, "bad argument #%d to '%s' (%s)", narg, calledName(L), msg)
}

// calledName is the name the running Go function was called by.
func calledName(L *lua.LState) string {
	caller, ok := L.GetStack(1)
	if !ok {
		return "?"
	}
	if _, err := L.GetInfo("S", caller, lua.LNil); err != nil || caller.What == "G" {
		return "?"
	}
	self, ok := L.GetStack(0)
	if !ok {
		return "?"
	}
	if _, err := L.GetInfo("n", self, lua.LNil); err != nil || self.Name == "" {
		return "?"
	}
	return self.Name
}

// luaLTypeName is luaL_typename: the type of argument n, "no value" past the last.
func luaLTypeName(L *lua.LState, n int) string {
	if n > L.GetTop() {
		return "no value"
	}
	if isNullPointer(L.Get(n)) {
		return "userdata"
	}
	return L.Get(n).Type().String()
}

// luaLTypeError is luaL_typerror.
func luaLTypeError(L *lua.LState, n int, want string) {
	luaLArgError(L, n, want+" expected, got "+luaLTypeName(L, n))
}

// luaLCheckNumber is luaL_checknumber: a number or a string Lua converts.
func luaLCheckNumber(L *lua.LState, n int) float64 {
	v, ok := luaNumber(L.Get(n))
	if !ok {
		luaLTypeError(L, n, "number")
	}
	return v
}

// luaLCheckInteger is luaL_checkinteger: luaL_checknumber cast to an integer.
func luaLCheckInteger(L *lua.LState, n int) int64 {
	return luaToInteger(luaLCheckNumber(L, n))
}

// luaLOptInteger is luaL_optinteger.
func luaLOptInteger(L *lua.LState, n int, def int64) int64 {
	if L.Get(n) == lua.LNil {
		return def
	}
	return luaLCheckInteger(L, n)
}

// luaLCheckString is luaL_checklstring: a string, or a number as "%.14g".
func luaLCheckString(L *lua.LState, n int) string {
	s, ok := luaStringOrNumber(L.Get(n))
	if !ok {
		luaLTypeError(L, n, "string")
	}
	return s
}

// luaStringOrNumber is lua_tolstring on a string or a number (as "%.14g");
// ok is false for any other value.
func luaStringOrNumber(v lua.LValue) (string, bool) {
	switch v := v.(type) {
	case lua.LString:
		return string(v), true
	case lua.LNumber:
		return formatLuaNumber(float64(v)), true
	}
	return "", false
}

// nullPointer marks the userdata that stands for a NULL light userdata
// (cjson.null): tostring shows "userdata: (nil)" as glibc prints NULL.
type nullPointer struct{}

func isNullPointer(v lua.LValue) bool {
	ud, ok := v.(*lua.LUserData)
	if !ok {
		return false
	}
	_, ok = ud.Value.(nullPointer)
	return ok
}
