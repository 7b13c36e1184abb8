package luatest

import (
	"math"
	"sync"
	"sync/atomic"

	lua "github.com/yuin/gopher-lua"
)

// luaVM is one sandboxed gopher-lua state, built once and reused by many runs.
//
// Everything a script can reach and that outlives its run is read-only, as in
// Redis 7.0 (which locks the globals, every table reachable from them and their
// metatables): the global table, the library tables, the string metatable and the
// metatable of the globals are reached only through read-only proxies, and every
// way gopher-lua offers to write a table behind Lua's back (rawset, setmetatable,
// table.insert) refuses a proxy. What a run may change lives in tables made for
// that run (KEYS, ARGV, the script's own tables and closures) or on the Go side
// (runState), and begin replaces it before the next run.
type luaVM struct {
	id      uint64 // distinct for every state built, so tests can tell reuse
	L       *lua.LState
	run     *runState                    // the run using the state; nil while pooled
	globals *lua.LTable                  // the real global table, behind the _G proxy
	proxies map[*lua.LTable]*lua.LTable  // read-only proxy → the table it shows
	views   map[*lua.LTable]*lua.LTable  // protected table → its read-only proxy
	hidden  map[*lua.LTable]bool         // metatables a script must not see (getmetatable gives nil)
	orig    map[string]lua.LValue        // gopher-lua's own base functions
	sources map[string]string            // chunk display name → Lua source, for loadstring/load chunks
	handler *lua.LFunction               // the error handler of a run's PCall
	overran bool                         // the last run hit its timeout; the state is then dropped
	cCalls  int                          // nested calls from Go into Lua (Lua 5.1's nCcalls)
	null    *lua.LUserData               // cjson.null: a NULL light userdata
	cjson   cjsonConfig                  // the cjson module's settings, reset for each run
	covered map[*coverage]*coveredScript // instrumented scripts made in this state (cover.go)
}

// vmCount numbers the states built.
var vmCount atomic.Uint64

// maxPooledVMs bounds the idle states kept for reuse (each holds about 300 KB).
const maxPooledVMs = 16

// vmPool holds idle states, last in first out, shared by every Server.
var vmPool struct {
	mu   sync.Mutex
	free []*luaVM
}

// acquireVM returns an idle pooled state, or a new one.
func acquireVM() *luaVM {
	vmPool.mu.Lock()
	if n := len(vmPool.free); n > 0 {
		vm := vmPool.free[n-1]
		vmPool.free[n-1] = nil
		vmPool.free = vmPool.free[:n-1]
		vmPool.mu.Unlock()
		return vm
	}
	vmPool.mu.Unlock()
	return newVM()
}

// releaseVM pools an idle state, or closes it when the pool is full.
func releaseVM(vm *luaVM) {
	vmPool.mu.Lock()
	if len(vmPool.free) < maxPooledVMs {
		vmPool.free = append(vmPool.free, vm)
		vmPool.mu.Unlock()
		return
	}
	vmPool.mu.Unlock()
	vm.close()
}

func (vm *luaVM) close() { vm.L.Close() }

// newVM builds a state sandboxed as Redis 7.0.15 sandboxes its Lua: base,
// table, string, math, cjson, cmsgpack, bit and struct libraries, globals and
// libraries read-only.
func newVM() *luaVM {
	L := lua.NewState(lua.Options{
		SkipOpenLibs:     true,
		CallStackSize:    callStackSize,
		RegistrySize:     registrySize,
		RegistryMaxSize:  registryMaxSize,
		RegistryGrowStep: registryGrowStep,
	})
	for _, lib := range []struct {
		name string
		fn   lua.LGFunction
	}{
		{lua.BaseLibName, lua.OpenBase},
		{lua.TabLibName, lua.OpenTable},
		{lua.StringLibName, lua.OpenString},
		{lua.MathLibName, lua.OpenMath},
	} {
		L.Push(L.NewFunction(lib.fn))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	orig := L.G.Global
	vm := &luaVM{
		id:      vmCount.Add(1),
		L:       L,
		proxies: map[*lua.LTable]*lua.LTable{},
		views:   map[*lua.LTable]*lua.LTable{},
		orig:    map[string]lua.LValue{},
		sources: map[string]string{},
	}
	orig.ForEach(func(k, v lua.LValue) {
		if s, ok := k.(lua.LString); ok {
			vm.orig[string(s)] = v
		}
	})

	real := L.NewTable() // the globals a script reads; reached only through the _G proxy
	vm.globals = real
	for _, name := range baseGlobals {
		real.RawSetString(name, orig.RawGetString(name))
	}
	fns := map[string]lua.LGFunction{
		"pcall":                 vm.redisPcall,
		"xpcall":                vm.xpcall,
		"tostring":              luaTostring,
		"tonumber":              luaTonumber,
		"unpack":                luaUnpack,
		"select":                luaSelect,
		"error":                 luaError,
		"loadstring":            vm.loadstring,
		"load":                  vm.load,
		"collectgarbage":        luaCollectGarbage,
		"gcinfo":                luaGcinfo,
		"next":                  vm.next,
		"pairs":                 vm.pairs,
		"rawget":                vm.rawget,
		"rawset":                vm.rawset,
		"setmetatable":          vm.setmetatable,
		"getmetatable":          vm.getmetatable,
		"__redis__err__handler": vm.luaErrHandler,
	}
	for name, fn := range fns {
		real.RawSetString(name, L.NewFunction(fn))
	}

	mathLib := orig.RawGetString("math").(*lua.LTable)
	mathLib.RawSetString("huge", lua.LNumber(math.Inf(1)))
	mathLib.RawSetString("random", L.NewFunction(vm.mathRandom))
	mathLib.RawSetString("randomseed", L.NewFunction(vm.mathRandomseed))
	tableLib := orig.RawGetString("table").(*lua.LTable)
	tableLib.RawSetString("foreach", L.NewFunction(tableForeach))
	tableLib.RawSetString("foreachi", L.NewFunction(tableForeachi))
	tableLib.RawSetString("setn", L.NewFunction(tableSetn))
	tableLib.RawSetString("insert", L.NewFunction(vm.tableInsert))
	stringLib := orig.RawGetString("string").(*lua.LTable)
	stringLib.RawSetString("dump", L.NewFunction(stringDump))

	real.RawSetString("string", vm.readonly(L, stringLib))
	real.RawSetString("table", vm.readonly(L, tableLib))
	real.RawSetString("math", vm.readonly(L, mathLib))
	real.RawSetString("redis", vm.readonly(L, vm.redisTable(L)))
	vm.null = L.NewUserData()
	vm.null.Value = nullPointer{}

	vm.cjson = cjsonDefaults()
	real.RawSetString("cjson", vm.readonly(L, vm.openCJSON(L, &vm.cjson)))
	real.RawSetString("cmsgpack", vm.readonly(L, vm.openCmsgpack(L)))
	real.RawSetString("bit", vm.readonly(L, openBit(L)))
	real.RawSetString("struct", vm.readonly(L, openStruct(L)))
	real.RawSetString("coroutine", vm.readonly(L, vm.openCoroutine(L)))

	// ("x"):upper() finds the string library through this metatable, which
	// Redis 7.0.15 protects too (getmetatable('').x = 1 is refused). The
	// metatable gopher-lua uses also has a __call, like the hidden ones of
	// nil, booleans, numbers and cjson.null below, so that calling what is
	// not a function fails with Lua 5.1's "attempt to call a nil value"
	// instead of gopher-lua's "attempt to call a non-function object"; a
	// script sees the metatable without it.
	callError := L.NewFunction(luaCallError)
	lenError := L.NewFunction(luaLenError)
	unmError := L.NewFunction(luaUnmError)
	strMeta := L.NewTable()
	strMeta.RawSetString("__index", real.RawGetString("string"))
	strMetaUsed := L.NewTable()
	strMetaUsed.RawSetString("__index", real.RawGetString("string"))
	strMetaUsed.RawSetString("__call", callError)
	strMetaUsed.RawSetString("__unm", unmError)
	vm.views[strMetaUsed] = vm.readonly(L, strMeta)
	L.SetMetatable(lua.LString(""), strMetaUsed)
	vm.hidden = map[*lua.LTable]bool{}
	for _, v := range []lua.LValue{lua.LNil, lua.LFalse, lua.LNumber(0)} {
		mt := L.NewTable()
		mt.RawSetString("__call", callError)
		mt.RawSetString("__len", lenError)
		mt.RawSetString("__unm", unmError)
		vm.hidden[mt] = true
		L.SetMetatable(v, mt)
	}
	nullMeta := L.NewTable()
	nullMeta.RawSetString("__call", callError)
	nullMeta.RawSetString("__len", lenError)
	nullMeta.RawSetString("__unm", unmError)
	vm.hidden[nullMeta] = true
	vm.null.Metatable = nullMeta

	missing := L.NewTable()
	missing.RawSetString("__index", L.NewFunction(nonexistentGlobal))
	vm.readonly(L, missing)
	L.SetMetatable(real, missing)

	globals := vm.readonly(L, real)
	real.RawSetString("_G", globals)
	L.G.Global = globals
	L.Env = globals
	vm.handler = L.NewFunction(vm.errorHandler)
	return vm
}

// begin prepares the state for run r: KEYS and ARGV of the run, no chunk names
// left from the last run, cjson's settings back to their defaults (in Redis a
// script's cjson.encode_max_depth(n) and the like outlive it; here they last
// for the run).
func (vm *luaVM) begin(r *runState, keys, argv []string) {
	vm.run = r
	r.vm = vm
	r.res.stateID = vm.id
	clear(vm.sources)
	vm.cjson = cjsonDefaults()
	vm.cCalls = 1 // the script itself, called by Redis through lua_pcall
	vm.globals.RawSetString("KEYS", stringArray(vm.L, keys))
	vm.globals.RawSetString("ARGV", stringArray(vm.L, argv))
}

// end detaches the run and reports whether the state may serve another run: it
// may not when the run overran (the state was interrupted mid-instruction) or
// left frames on the call stack.
func (vm *luaVM) end() bool {
	vm.run = nil
	if vm.overran {
		return false
	}
	vm.L.SetTop(0)
	if _, ok := vm.L.GetStack(0); ok {
		return false
	}
	vm.globals.RawSetString("KEYS", lua.LNil)
	vm.globals.RawSetString("ARGV", lua.LNil)
	return true
}

func stringArray(L *lua.LState, ss []string) *lua.LTable {
	t := L.CreateTable(len(ss), 0)
	for i, s := range ss {
		t.RawSetInt(i+1, lua.LString(s))
	}
	return t
}

// readonly returns an empty proxy that shows t and refuses every assignment,
// and remembers it as t's view.
func (vm *luaVM) readonly(L *lua.LState, t *lua.LTable) *lua.LTable {
	p := L.NewTable()
	mt := L.NewTable()
	mt.RawSetString("__index", t)
	mt.RawSetString("__newindex", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError(readonlyMsg)
		return 0
	}))
	mt.RawSetString("__metatable", lua.LFalse)
	L.SetMetatable(p, mt)
	vm.proxies[p] = t
	vm.views[t] = p
	return p
}

// shown is the table a value shows: the real table behind a read-only proxy.
func (vm *luaVM) shown(v lua.LValue) lua.LValue {
	if t, ok := v.(*lua.LTable); ok {
		if real, ok := vm.proxies[t]; ok {
			return real
		}
	}
	return v
}

// isProxy reports whether v is a read-only proxy.
func (vm *luaVM) isProxy(v lua.LValue) bool {
	t, ok := v.(*lua.LTable)
	if !ok {
		return false
	}
	_, ok = vm.proxies[t]
	return ok
}
