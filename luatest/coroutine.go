package luatest

import (
	lua "github.com/yuin/gopher-lua"
)

// The coroutine library with Lua 5.1's rules and texts over gopher-lua's
// threads: only Lua functions become coroutines, a coroutine that is running,
// normal or dead cannot be resumed ("cannot resume dead coroutine"), yield
// cannot cross a Go (C) function such as pcall or leave the main chunk
// ("attempt to yield across metamethod/C-call boundary"), and wrap raises the
// coroutine's error with the caller's position in front. Coroutines get small
// Lua states that grow on demand, and their contexts end with the run.

func (vm *luaVM) openCoroutine(L *lua.LState) *lua.LTable {
	L.Push(L.NewFunction(lua.OpenCoroutine))
	L.Push(lua.LString(lua.CoroutineLibName))
	L.Call(1, 1)
	lib := L.Get(-1).(*lua.LTable)
	L.Pop(1)
	origCreate := lib.RawGetString("create")
	origResume := lib.RawGetString("resume")

	create := func(L *lua.LState) *lua.LState {
		fn, ok := L.Get(1).(*lua.LFunction)
		if !ok || fn.IsG {
			luaLArgError(L, 1, "Lua function expected")
		}
		saved := L.Options
		L.Options.CallStackSize = callStackSize
		L.Options.RegistrySize = 256
		L.Options.RegistryGrowStep = 256
		L.Options.RegistryMaxSize = registryMaxSize
		L.Options.MinimizeStackMemory = true
		L.Push(origCreate)
		L.Push(fn)
		L.Call(1, 1)
		L.Options = saved
		th := L.Get(-1).(*lua.LState)
		L.Pop(1)
		return th
	}
	// resume resumes th with the values above position from on L's stack,
	// and leaves true and its results, or false and its error, there.
	resume := func(L *lua.LState, th *lua.LState, from int) {
		if st := coStatus(L, th); st != "suspended" {
			L.SetTop(from - 1)
			L.Push(lua.LFalse)
			L.Push(lua.LString("cannot resume " + st + " coroutine"))
			return
		}
		args := []lua.LValue{}
		for i := from; i <= L.GetTop(); i++ {
			args = append(args, L.Get(i))
		}
		L.SetTop(from - 1)
		L.Push(origResume)
		L.Push(th)
		for _, a := range args {
			L.Push(a)
		}
		L.Call(len(args)+1, lua.MultRet)
		if L.Get(from) == lua.LFalse {
			if s, ok := L.Get(from + 1).(lua.LString); ok {
				L.Replace(from+1, lua.LString(lua51Message(string(s))))
			}
		}
	}
	fns := map[string]lua.LGFunction{
		"create": func(L *lua.LState) int {
			L.Push(create(L))
			return 1
		},
		"resume": func(L *lua.LState) int {
			th, ok := L.Get(1).(*lua.LState)
			if !ok {
				luaLArgError(L, 1, "coroutine expected")
			}
			resume(L, th, 2)
			return L.GetTop() - 1
		},
		"wrap": func(L *lua.LState) int {
			th := create(L)
			L.Push(L.NewFunction(func(L *lua.LState) int {
				resume(L, th, 1)
				if L.Get(1) == lua.LFalse {
					err := L.Get(2)
					if s, ok := err.(lua.LString); ok {
						raise(L, where(L, 1)+string(s))
					}
					L.Error(err, 0)
				}
				L.Remove(1)
				return L.GetTop()
			}))
			return 1
		},
		"yield": func(L *lua.LState) int {
			if L.Parent == nil || crossesGo(L) {
				raise(L, "attempt to yield across metamethod/C-call boundary")
			}
			return -1 // gopher-lua's yield: the values on the stack go to resume
		},
		"status": func(L *lua.LState) int {
			th, ok := L.Get(1).(*lua.LState)
			if !ok {
				luaLArgError(L, 1, "coroutine expected")
			}
			L.Push(lua.LString(coStatus(L, th)))
			return 1
		},
		"running": func(L *lua.LState) int {
			if L.Parent == nil {
				L.Push(lua.LNil)
			} else {
				L.Push(L)
			}
			return 1
		},
	}
	t := L.NewTable()
	for name, fn := range fns {
		t.RawSetString(name, L.NewFunction(fn))
	}
	return t
}

// coStatus is Lua 5.1's costatus of co seen from L.
func coStatus(L, co *lua.LState) string {
	switch {
	case co == L:
		return "running"
	case co.Dead:
		return "dead"
	}
	for p := L.Parent; p != nil; p = p.Parent {
		if p == co {
			return "normal"
		}
	}
	return "suspended"
}

// crossesGo reports whether a Go function stands between the running yield
// and the body of its coroutine (a yield inside pcall, say).
func crossesGo(L *lua.LState) bool {
	for level := 1; ; level++ {
		dbg, ok := L.GetStack(level)
		if !ok {
			return false
		}
		if _, err := L.GetInfo("S", dbg, lua.LNil); err != nil {
			return true
		}
		if dbg.What == "G" {
			return true
		}
	}
}
