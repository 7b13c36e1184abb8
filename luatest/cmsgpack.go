package luatest

import (
	"bytes"
	"math"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
	lua "github.com/yuin/gopher-lua"
)

// The cmsgpack library of Redis 7.0 (lua-cmsgpack 0.4.0,
// deps/lua/src/lua_cmsgpack.c) on vmihailenco/msgpack: the same bytes out,
// the same values and errors in.

// cmsgpackMaxNesting is LUACMSGPACK_MAX_NESTING: tables nested deeper are
// packed as nil (so a table that contains itself packs).
const cmsgpackMaxNesting = 16

func (vm *luaVM) openCmsgpack(L *lua.LState) *lua.LTable {
	t := L.NewTable()
	t.RawSetString("pack", L.NewFunction(vm.mpPack))
	t.RawSetString("unpack", L.NewFunction(func(L *lua.LState) int { return mpUnpackFull(L, 0, 0) }))
	t.RawSetString("unpack_one", L.NewFunction(func(L *lua.LState) int {
		offset := luaLOptInteger(L, 2, 0)
		L.SetTop(1)
		return mpUnpackFull(L, 1, offset)
	}))
	t.RawSetString("unpack_limit", L.NewFunction(func(L *lua.LState) int {
		limit := luaLCheckInteger(L, 2)
		offset := luaLOptInteger(L, 3, 0)
		L.SetTop(1)
		return mpUnpackFull(L, limit, offset)
	}))
	t.RawSetString("_NAME", lua.LString("cmsgpack"))
	t.RawSetString("_VERSION", lua.LString("lua-cmsgpack 0.4.0"))
	t.RawSetString("_COPYRIGHT", lua.LString("Copyright (C) 2012, Salvatore Sanfilippo"))
	t.RawSetString("_DESCRIPTION", lua.LString("MessagePack C implementation for Lua"))
	return t
}

// mpEncoder packs Lua values as mp_encode_lua_type does.
type mpEncoder struct {
	L   *lua.LState
	vm  *luaVM
	buf bytes.Buffer
	enc *msgpack.Encoder
}

func (vm *luaVM) mpPack(L *lua.LState) int {
	n := L.GetTop()
	if n == 0 {
		luaLArgError(L, 0, "MessagePack pack needs input.")
	}
	if n+1 > luaMaxCStack {
		luaLArgError(L, 0, "Too many arguments for MessagePack pack.")
	}
	e := &mpEncoder{L: L, vm: vm}
	e.enc = msgpack.NewEncoder(&e.buf)
	for i := 1; i <= n; i++ {
		e.value(L.Get(i), 0)
	}
	L.Push(lua.LString(e.buf.String()))
	return 1
}

func (e *mpEncoder) value(v lua.LValue, level int) {
	// Writes to a bytes.Buffer cannot fail.
	switch v := v.(type) {
	case lua.LString:
		_ = e.enc.EncodeString(string(v))
	case lua.LBool:
		_ = e.enc.EncodeBool(bool(v))
	case lua.LNumber:
		n := float64(v)
		if !math.IsInf(n, 0) && float64(luaToInteger(n)) == n {
			_ = e.enc.EncodeInt(luaToInteger(n))
		} else if f := float32(n); float64(f) == n {
			_ = e.enc.EncodeFloat32(f)
		} else {
			_ = e.enc.EncodeFloat64(n)
		}
	case *lua.LTable:
		if level == cmsgpackMaxNesting {
			_ = e.enc.EncodeNil()
			return
		}
		v = e.vm.shown(v).(*lua.LTable) // a library table, not its read-only proxy
		if n, ok := mpArrayLength(v); ok {
			_ = e.enc.EncodeArrayLen(n)
			for j := 1; j <= n; j++ {
				e.value(e.L.GetTable(v, lua.LNumber(j)), level+1)
			}
			return
		}
		count := 0
		forEachInOrder(v, func(_, _ lua.LValue) { count++ })
		_ = e.enc.EncodeMapLen(count)
		forEachInOrder(v, func(k, val lua.LValue) {
			e.value(k, level+1)
			e.value(val, level+1)
		})
	default:
		_ = e.enc.EncodeNil()
	}
}

// mpArrayLength is table_is_an_array: the keys are exactly 1..n (as C ints).
func mpArrayLength(t *lua.LTable) (int, bool) {
	count, maxIndex := 0, 0
	array := true
	forEachInOrder(t, func(k, _ lua.LValue) {
		if !array {
			return
		}
		n, ok := k.(lua.LNumber)
		if !ok || n <= 0 || float64(cInt32(float64(n))) != float64(n) {
			array = false
			return
		}
		if int(n) > maxIndex {
			maxIndex = int(n)
		}
		count++
	})
	return count, array && maxIndex == count
}

// mpDecoder unpacks values as mp_decode_to_lua_type does.
type mpDecoder struct {
	L   *lua.LState
	r   *bytes.Reader
	dec *msgpack.Decoder
	top int // stack slots in use, as luaL_checkstack counts them
	err string
}

const (
	mpErrEOF    = "Missing bytes in input."
	mpErrBadFmt = "Bad data format in input."
)

func mpUnpackFull(L *lua.LState, limit, offset int64) int {
	s := luaLCheckString(L, 1)
	decodeAll := limit == 0 && offset == 0
	if offset < 0 || limit < 0 {
		// lua_cmsgpack.c prints the input's length where it means the limit.
		luaLError(L, "Invalid request to unpack with offset of %d and limit of %d.", int32(offset), int32(len(s)))
	} else if offset > int64(len(s)) {
		luaLError(L, "Start offset %d greater than input length %d.", int32(offset), int32(len(s)))
	}
	if decodeAll {
		limit = math.MaxInt32
	}
	r := bytes.NewReader([]byte(s[offset:]))
	d := &mpDecoder{L: L, r: r, dec: msgpack.NewDecoder(r), top: L.GetTop()}
	var out []lua.LValue
	for cnt := int64(0); r.Len() > 0 && cnt < limit; cnt++ {
		v := d.value()
		if d.err != "" {
			luaLError(L, "%s", d.err)
		}
		out = append(out, v)
		d.top++
	}
	if !decodeAll {
		next := int64(-1)
		if r.Len() > 0 {
			next = int64(len(s)) - int64(r.Len())
		}
		L.Push(lua.LNumber(next))
	}
	for _, v := range out {
		L.Push(v)
	}
	if decodeAll {
		return len(out)
	}
	return len(out) + 1
}

func (d *mpDecoder) fail(err error) lua.LValue {
	if err != nil && d.err == "" {
		d.err = mpErrEOF
	}
	return lua.LNil
}

func (d *mpDecoder) value() lua.LValue {
	if d.r.Len() < 1 {
		d.err = mpErrEOF
		return lua.LNil
	}
	if d.top+1 > luaMaxCStack {
		luaLError(d.L, "stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)")
	}
	c, err := d.dec.PeekCode()
	if err != nil {
		return d.fail(err)
	}
	switch {
	case c == msgpcode.Uint64:
		n, err := d.dec.DecodeUint64()
		if err != nil {
			return d.fail(err)
		}
		return lua.LNumber(float64(int64(n))) // lua_pushinteger of the uint64
	case msgpcode.IsFixedNum(c), c == msgpcode.Uint8, c == msgpcode.Uint16, c == msgpcode.Uint32,
		c == msgpcode.Int8, c == msgpcode.Int16, c == msgpcode.Int32, c == msgpcode.Int64:
		n, err := d.dec.DecodeInt64()
		if err != nil {
			return d.fail(err)
		}
		return lua.LNumber(float64(n))
	case c == msgpcode.Nil:
		return d.fail(d.dec.DecodeNil())
	case c == msgpcode.True, c == msgpcode.False:
		b, err := d.dec.DecodeBool()
		if err != nil {
			return d.fail(err)
		}
		return lua.LBool(b)
	case c == msgpcode.Float:
		f, err := d.dec.DecodeFloat32()
		if err != nil {
			return d.fail(err)
		}
		return lua.LNumber(float64(f))
	case c == msgpcode.Double:
		f, err := d.dec.DecodeFloat64()
		if err != nil {
			return d.fail(err)
		}
		return lua.LNumber(f)
	case msgpcode.IsFixedString(c), c == msgpcode.Str8, c == msgpcode.Str16, c == msgpcode.Str32:
		s, err := d.dec.DecodeString()
		if err != nil {
			return d.fail(err)
		}
		return lua.LString(s)
	case msgpcode.IsFixedArray(c), c == msgpcode.Array16, c == msgpcode.Array32:
		n, err := d.dec.DecodeArrayLen()
		if err != nil {
			return d.fail(err)
		}
		return d.array(n)
	case msgpcode.IsFixedMap(c), c == msgpcode.Map16, c == msgpcode.Map32:
		n, err := d.dec.DecodeMapLen()
		if err != nil {
			return d.fail(err)
		}
		return d.hash(n)
	}
	d.err = mpErrBadFmt
	return lua.LNil
}

func (d *mpDecoder) array(n int) lua.LValue {
	t := d.L.NewTable()
	d.top++
	defer func() { d.top-- }()
	if d.top+1 > luaMaxCStack {
		luaLError(d.L, "stack overflow (in function mp_decode_to_lua_array)")
	}
	for i := 1; i <= n; i++ {
		d.top++
		v := d.value()
		d.top--
		if d.err != "" {
			return lua.LNil
		}
		if v != lua.LNil {
			t.RawSetInt(i, v)
		}
	}
	return t
}

func (d *mpDecoder) hash(n int) lua.LValue {
	t := d.L.NewTable()
	d.top++
	defer func() { d.top-- }()
	for range n {
		k := d.value()
		if d.err != "" {
			return lua.LNil
		}
		d.top++
		v := d.value()
		d.top--
		if d.err != "" {
			return lua.LNil
		}
		switch kn := k.(type) {
		case *lua.LNilType:
			raise(d.L, "table index is nil")
		case lua.LNumber:
			if math.IsNaN(float64(kn)) {
				raise(d.L, "table index is NaN")
			}
		}
		t.RawSet(k, v)
	}
	return t
}
