package luatest

import (
	"math"

	lua "github.com/yuin/gopher-lua"
)

// The bit library of Redis 7.0 (LuaBitOp 1.0.2, deps/lua/src/lua_bit.c):
// operations on 32-bit integers, results as signed 32-bit numbers.

func openBit(L *lua.LState) *lua.LTable {
	t := L.NewTable()
	shift := func(op func(b, n uint32) uint32) lua.LGFunction {
		return func(L *lua.LState) int {
			b := bitArg(L, 1)
			n := bitArg(L, 2) & 31
			return bitReturn(L, op(b, n))
		}
	}
	fold := func(op func(a, b uint32) uint32) lua.LGFunction {
		return func(L *lua.LState) int {
			b := bitArg(L, 1)
			for i := L.GetTop(); i > 1; i-- {
				b = op(b, bitArg(L, i))
			}
			return bitReturn(L, b)
		}
	}
	fns := map[string]lua.LGFunction{
		"tobit":   func(L *lua.LState) int { return bitReturn(L, bitArg(L, 1)) },
		"bnot":    func(L *lua.LState) int { return bitReturn(L, ^bitArg(L, 1)) },
		"band":    fold(func(a, b uint32) uint32 { return a & b }),
		"bor":     fold(func(a, b uint32) uint32 { return a | b }),
		"bxor":    fold(func(a, b uint32) uint32 { return a ^ b }),
		"lshift":  shift(func(b, n uint32) uint32 { return b << n }),
		"rshift":  shift(func(b, n uint32) uint32 { return b >> n }),
		"arshift": shift(func(b, n uint32) uint32 { return uint32(int32(b) >> n) }),
		"rol":     shift(func(b, n uint32) uint32 { return b<<n | b>>(32-n) }),
		"ror":     shift(func(b, n uint32) uint32 { return b<<(32-n) | b>>n }),
		"bswap": func(L *lua.LState) int {
			b := bitArg(L, 1)
			return bitReturn(L, b>>24|b>>8&0xff00|(b&0xff00)<<8|b<<24)
		},
		"tohex": bitTohex,
	}
	for name, fn := range fns {
		t.RawSetString(name, L.NewFunction(fn))
	}
	return t
}

// bitArg is barg: the number (lua_tonumber: 0 for what is not one) rounded to
// an integer and taken modulo 2^32, by adding 2^52+2^51 and keeping the low
// word of the double; what is not a number is an error unless it came out 0.
func bitArg(L *lua.LState, i int) uint32 {
	n, isNumber := luaNumber(L.Get(i))
	b := uint32(math.Float64bits(n + 6755399441055744.0))
	if b == 0 && !isNumber {
		luaLTypeError(L, i, "number")
	}
	return b
}

func bitReturn(L *lua.LState, b uint32) int {
	L.Push(lua.LNumber(int32(b)))
	return 1
}

func bitTohex(L *lua.LState) int {
	b := bitArg(L, 1)
	n := int32(8)
	if L.GetTop() >= 2 {
		n = int32(bitArg(L, 2))
	}
	digits := "0123456789abcdef"
	if n < 0 {
		n = -n
		digits = "0123456789ABCDEF"
	}
	if n > 8 {
		n = 8
	}
	if n < 0 { // -INT_MIN: C reads past its buffer here; give the widest result
		n = 8
	}
	buf := make([]byte, n)
	for i := n - 1; i >= 0; i-- {
		buf[i] = digits[b&15]
		b >>= 4
	}
	L.Push(lua.LString(buf))
	return 1
}
