package luatest

import (
	"math"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// The struct library of Redis 7.0 (Roberto Ierusalimschy's struct.c,
// deps/lua/src/lua_struct.c) as compiled on x86-64: little endian by default,
// long and size_t of 8 bytes, int of 4, maximum alignment 8.

const (
	structMaxIntSize = 32
	structMaxAlign   = 8
	structBig        = 0
	structLittle     = 1
)

func openStruct(L *lua.LState) *lua.LTable {
	t := L.NewTable()
	t.RawSetString("pack", L.NewFunction(structPack))
	t.RawSetString("unpack", L.NewFunction(structUnpack))
	t.RawSetString("size", L.NewFunction(structSize))
	return t
}

type structHeader struct {
	endian int
	align  int
}

// structFormat walks a format string as struct.c does with its fmt pointer.
type structFormat struct {
	L   *lua.LState
	fmt string
	pos int
}

func (f *structFormat) more() bool { return f.pos < len(f.fmt) && f.fmt[f.pos] != 0 }

func (f *structFormat) next() byte {
	c := f.fmt[f.pos]
	f.pos++
	return c
}

func (f *structFormat) peek() byte {
	if f.pos < len(f.fmt) {
		return f.fmt[f.pos]
	}
	return 0
}

// getnum reads a size after an option, or gives df.
func (f *structFormat) getnum(df int) int {
	if c := f.peek(); c < '0' || c > '9' {
		return df
	}
	a := 0
	for c := f.peek(); c >= '0' && c <= '9'; c = f.peek() {
		d := int(c - '0')
		if a > math.MaxInt32/10 || a*10 > math.MaxInt32-d {
			luaLError(f.L, "integral size overflow")
		}
		a = a*10 + d
		f.pos++
	}
	return a
}

func (f *structFormat) optsize(opt byte) int {
	switch opt {
	case 'B', 'b':
		return 1
	case 'H', 'h':
		return 2
	case 'L', 'l', 'T', 'd':
		return 8
	case 'f':
		return 4
	case 'x':
		return 1
	case 'c':
		return f.getnum(1)
	case 'i', 'I':
		sz := f.getnum(4)
		if sz > structMaxIntSize {
			luaLError(f.L, "integral size %d is larger than limit of %d", sz, structMaxIntSize)
		}
		return sz
	}
	return 0
}

// gettoalign is how many bytes align an item of size at position n.
func gettoalign(n int, h *structHeader, opt byte, size int) int {
	if size == 0 || opt == 'c' {
		return 0
	}
	if size > h.align {
		size = h.align
	}
	return (size - (n & (size - 1))) & (size - 1)
}

func (f *structFormat) controloptions(opt byte, h *structHeader) {
	switch opt {
	case ' ':
	case '>':
		h.endian = structBig
	case '<':
		h.endian = structLittle
	case '!':
		a := f.getnum(structMaxAlign)
		if a <= 0 || a&(a-1) != 0 {
			luaLError(f.L, "alignment %d is not a power of 2", a)
		}
		h.align = a
	default:
		luaLArgError(f.L, 1, "invalid format option '"+string(opt)+"'")
	}
}

// structUint is C's (unsigned long) of a double: (unsigned long)(long)n for a
// negative n, as struct.c writes it.
func structUint(n float64) uint64 {
	if n < 0 {
		return uint64(luaToInteger(n))
	}
	switch {
	case math.IsNaN(n):
		return 1 << 63
	case n >= 18446744073709551616.0:
		return 0
	case n >= 9223372036854775808.0:
		return uint64(int64(n-9223372036854775808.0)) ^ 1<<63
	}
	return uint64(n)
}

func structPack(L *lua.LState) int {
	f := &structFormat{L: L, fmt: luaLCheckString(L, 1)}
	h := structHeader{endian: structLittle, align: 1}
	arg := 2
	L.Push(lua.LNil) // struct.c's mark between the arguments and its buffer: one argument too many reads nil
	var b strings.Builder
	total := 0
	for f.more() {
		opt := f.next()
		size := f.optsize(opt)
		toalign := gettoalign(total, &h, opt, size)
		total += toalign
		for ; toalign > 0; toalign-- {
			b.WriteByte(0)
		}
		switch opt {
		case 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I':
			v := structUint(luaLCheckNumber(L, arg))
			arg++
			buf := make([]byte, size)
			if h.endian == structLittle {
				for i := 0; i < size; i++ {
					buf[i] = byte(v)
					v >>= 8
				}
			} else {
				for i := size - 1; i >= 0; i-- {
					buf[i] = byte(v)
					v >>= 8
				}
			}
			b.Write(buf)
		case 'x':
			b.WriteByte(0)
		case 'f':
			bits := math.Float32bits(float32(luaLCheckNumber(L, arg)))
			arg++
			b.Write(orderBytes(uint64(bits), 4, h.endian))
		case 'd':
			bits := math.Float64bits(luaLCheckNumber(L, arg))
			arg++
			b.Write(orderBytes(bits, 8, h.endian))
		case 'c', 's':
			s := luaLCheckString(L, arg)
			arg++
			if size == 0 {
				size = len(s)
			}
			if len(s) < size {
				luaLArgError(L, arg, "string too short")
			}
			b.WriteString(s[:size])
			if opt == 's' {
				b.WriteByte(0)
				size++
			}
		default:
			f.controloptions(opt, &h)
		}
		total += size
	}
	L.Push(lua.LString(b.String()))
	return 1
}

// orderBytes writes the low size bytes of v in the given byte order.
func orderBytes(v uint64, size, endian int) []byte {
	out := make([]byte, size)
	for i := 0; i < size; i++ {
		if endian == structLittle {
			out[i] = byte(v >> (8 * i))
		} else {
			out[size-1-i] = byte(v >> (8 * i))
		}
	}
	return out
}

func structGetInteger(data string, endian int, signed bool, size int) float64 {
	var l uint64
	if endian == structBig {
		for i := 0; i < size; i++ {
			l = l<<8 | uint64(data[i])
		}
	} else {
		for i := size - 1; i >= 0; i-- {
			l = l<<8 | uint64(data[i])
		}
	}
	if !signed {
		return float64(l)
	}
	mask := ^uint64(0) << ((size*8 - 1) & 63) // x86 takes the shift count modulo 64
	if l&mask != 0 {
		l |= mask
	}
	return float64(int64(l))
}

func structUnpack(L *lua.LState) int {
	f := &structFormat{L: L, fmt: luaLCheckString(L, 1)}
	data := luaLCheckString(L, 2)
	ld := uint64(len(data))
	pos := uint64(luaLOptInteger(L, 3, 1))
	if pos == 0 {
		luaLArgError(L, 3, "offset must be 1 or greater")
	}
	pos--
	h := structHeader{endian: structLittle, align: 1}
	var results []lua.LValue
	top := L.GetTop()
	for f.more() {
		opt := f.next()
		size := uint64(f.optsize(opt))
		pos += uint64(gettoalign(int(pos), &h, opt, int(size)))
		if !(size <= ld && pos <= ld-size) {
			luaLArgError(L, 2, "data string too short")
		}
		if top+len(results)+2 > luaMaxCStack {
			luaLError(L, "stack overflow (too many results)")
		}
		switch opt {
		case 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I':
			signed := opt >= 'a' && opt <= 'z'
			results = append(results, lua.LNumber(structGetInteger(data[pos:], h.endian, signed, int(size))))
		case 'x':
		case 'f':
			bits := uint32(readOrdered(data[pos:], 4, h.endian))
			results = append(results, lua.LNumber(math.Float32frombits(bits)))
		case 'd':
			results = append(results, lua.LNumber(math.Float64frombits(readOrdered(data[pos:], 8, h.endian))))
		case 'c':
			if size == 0 {
				if len(results) == 0 {
					luaLError(L, "format 'c0' needs a previous size")
				}
				prev, ok := luaNumber(results[len(results)-1])
				if !ok {
					luaLError(L, "format 'c0' needs a previous size")
				}
				size = uint64(luaToInteger(prev))
				results = results[:len(results)-1]
				if !(size <= ld && pos <= ld-size) {
					luaLArgError(L, 2, "data string too short")
				}
			}
			results = append(results, lua.LString(data[pos:pos+size]))
		case 's':
			e := strings.IndexByte(data[pos:], 0)
			if e < 0 {
				luaLError(L, "unfinished string in data")
			}
			size = uint64(e) + 1
			results = append(results, lua.LString(data[pos:pos+uint64(e)]))
		default:
			f.controloptions(opt, &h)
		}
		pos += size
	}
	for _, r := range results {
		L.Push(r)
	}
	L.Push(lua.LNumber(float64(int64(pos + 1))))
	return len(results) + 1
}

// readOrdered reads size bytes in the given byte order.
func readOrdered(data string, size, endian int) uint64 {
	var v uint64
	for i := 0; i < size; i++ {
		var c byte
		if endian == structLittle {
			c = data[size-1-i]
		} else {
			c = data[i]
		}
		v = v<<8 | uint64(c)
	}
	return v
}

func structSize(L *lua.LState) int {
	f := &structFormat{L: L, fmt: luaLCheckString(L, 1)}
	h := structHeader{endian: structLittle, align: 1}
	pos := 0
	for f.more() {
		opt := f.next()
		size := f.optsize(opt)
		pos += gettoalign(pos, &h, opt, size)
		if opt == 's' {
			luaLArgError(L, 1, "option 's' has no fixed size")
		} else if opt == 'c' && size == 0 {
			luaLArgError(L, 1, "option 'c0' has no fixed size")
		}
		if !isAlnum(opt) {
			f.controloptions(opt, &h)
		}
		pos += size
	}
	L.Push(lua.LNumber(pos))
	return 1
}
