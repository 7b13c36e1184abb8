package luatest

import (
	"math"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// The cjson library of Redis 7.0 (lua-cjson 2.1.0, deps/lua/src/lua_cjson.c),
// ported function by function: same output bytes, same errors, same limits.

// cjsonConfig is one cjson module's settings (json_config_t).
type cjsonConfig struct {
	sparseConvert  bool
	sparseRatio    int
	sparseSafe     int
	encodeMaxDepth int
	decodeMaxDepth int
	encodeInvalid  int // 0 refuse, 1 encode (nan as "nan"), 2 as null
	decodeInvalid  bool
	keepBuffer     bool
	precision      int
}

func cjsonDefaults() cjsonConfig {
	return cjsonConfig{
		sparseRatio: 2, sparseSafe: 10,
		encodeMaxDepth: 1000, decodeMaxDepth: 1000,
		decodeInvalid: true, keepBuffer: true, precision: 14,
	}
}

// luaMaxCStack is Lua 5.1's LUAI_MAXCSTACK: the most stack slots a C function
// may use (lua_checkstack fails beyond it).
const luaMaxCStack = 8000

// openCJSON builds a cjson module table whose functions share cfg.
func (vm *luaVM) openCJSON(L *lua.LState, cfg *cjsonConfig) *lua.LTable {
	t := L.NewTable()
	fns := map[string]lua.LGFunction{
		"encode": func(L *lua.LState) int { return vm.cjsonEncode(L, cfg) },
		"decode": func(L *lua.LState) int { return vm.cjsonDecode(L, cfg) },
		"encode_sparse_array": func(L *lua.LState) int {
			cjsonArgInit(L, 3)
			cjsonBoolOption(L, 1, &cfg.sparseConvert)
			cjsonIntOption(L, 2, &cfg.sparseRatio, 0, math.MaxInt32)
			cjsonIntOption(L, 3, &cfg.sparseSafe, 0, math.MaxInt32)
			return 3
		},
		"new": func(L *lua.LState) int {
			fresh := cjsonDefaults()
			L.Push(vm.openCJSON(L, &fresh))
			return 1
		},
	}
	// The settings of one argument (json_arg_init(l, 1) and one option).
	settings := map[string]func(L *lua.LState){
		"encode_max_depth":        func(L *lua.LState) { cjsonIntOption(L, 1, &cfg.encodeMaxDepth, 1, math.MaxInt32) },
		"decode_max_depth":        func(L *lua.LState) { cjsonIntOption(L, 1, &cfg.decodeMaxDepth, 1, math.MaxInt32) },
		"encode_number_precision": func(L *lua.LState) { cjsonIntOption(L, 1, &cfg.precision, 1, 14) },
		"encode_keep_buffer":      func(L *lua.LState) { cjsonBoolOption(L, 1, &cfg.keepBuffer) },
		"encode_invalid_numbers":  func(L *lua.LState) { cjsonEnumOption(L, 1, &cfg.encodeInvalid, []string{"off", "on", "null"}) },
		"decode_invalid_numbers":  func(L *lua.LState) { cjsonBoolOption(L, 1, &cfg.decodeInvalid) },
	}
	for name, set := range settings {
		fns[name] = func(L *lua.LState) int {
			cjsonArgInit(L, 1)
			set(L)
			return 1
		}
	}
	for name, fn := range fns {
		t.RawSetString(name, L.NewFunction(fn))
	}
	t.RawSetString("null", vm.null)
	t.RawSetString("_NAME", lua.LString("cjson"))
	t.RawSetString("_VERSION", lua.LString("2.1.0"))
	return t
}

// cjsonArgInit is json_arg_init: at most args arguments, the rest nil.
func cjsonArgInit(L *lua.LState, args int) {
	if L.GetTop() > args {
		luaLArgError(L, args+1, "found too many arguments")
	}
	for L.GetTop() < args {
		L.Push(lua.LNil)
	}
}

// cjsonIntOption is json_integer_option: set the setting from argument i
// unless it is nil, and push the setting.
func cjsonIntOption(L *lua.LState, i int, setting *int, lo, hi int) {
	if L.Get(i) != lua.LNil {
		v := int(int32(luaLCheckInteger(L, i)))
		if v < lo || v > hi {
			luaLArgError(L, 1, "expected integer between "+itoa(lo)+" and "+itoa(hi))
		}
		*setting = v
	}
	L.Push(lua.LNumber(*setting))
}

// cjsonBoolOption is json_enum_option with the "off"/"on" options.
func cjsonBoolOption(L *lua.LState, i int, setting *bool) {
	v := 0
	if *setting {
		v = 1
	}
	cjsonEnumOption(L, i, &v, []string{"off", "on"})
	*setting = v == 1
}

// cjsonEnumOption is json_enum_option with bool_true 1.
func cjsonEnumOption(L *lua.LState, i int, setting *int, options []string) {
	if L.Get(i) != lua.LNil {
		if b, ok := L.Get(i).(lua.LBool); ok {
			*setting = 0
			if b {
				*setting = 1
			}
		} else {
			name := luaLCheckString(L, i)
			found := -1
			for j, o := range options {
				if o == name {
					found = j
					break
				}
			}
			if found < 0 {
				luaLArgError(L, i, "invalid option '"+name+"'")
			}
			*setting = found
		}
	}
	if *setting == 0 || *setting == 1 {
		L.Push(lua.LBool(*setting == 1))
	} else {
		L.Push(lua.LString(options[*setting]))
	}
}

// ---- encoding ----

// jsonEncoder is one cjson.encode call.
type jsonEncoder struct {
	L   *lua.LState
	vm  *luaVM
	cfg *cjsonConfig
	buf strings.Builder
	top int // stack slots in use, as lua_checkstack counts them
}

func (vm *luaVM) cjsonEncode(L *lua.LState, cfg *cjsonConfig) int {
	if L.GetTop() != 1 {
		luaLArgError(L, 1, "expected 1 argument")
	}
	e := &jsonEncoder{L: L, vm: vm, cfg: cfg, top: 1}
	e.value(L.Get(1), 0)
	L.Push(lua.LString(e.buf.String()))
	return 1
}

// jsonEscapes is char2escape: how each byte is written inside a JSON string
// ("" for as is).
var jsonEscapes = func() [256]string {
	var t [256]string
	for c := 0; c < 0x20; c++ {
		t[c] = `\u00` + string("0123456789abcdef"[c>>4]) + string("0123456789abcdef"[c&15])
	}
	t['\b'], t['\t'], t['\n'], t['\f'], t['\r'] = `\b`, `\t`, `\n`, `\f`, `\r`
	t['"'], t['\\'], t['/'], t[0x7f] = `\"`, `\\`, `\/`, `\u007f`
	return t
}()

func (e *jsonEncoder) exception(v lua.LValue, reason string) {
	luaLError(e.L, "Cannot serialise %s: %s", luaTypeName(v), reason)
}

func (e *jsonEncoder) str(s string) {
	e.buf.WriteByte('"')
	for i := 0; i < len(s); i++ {
		if esc := jsonEscapes[s[i]]; esc != "" {
			e.buf.WriteString(esc)
		} else {
			e.buf.WriteByte(s[i])
		}
	}
	e.buf.WriteByte('"')
}

func (e *jsonEncoder) number(v lua.LValue, n float64) {
	switch e.cfg.encodeInvalid {
	case 0:
		if math.IsInf(n, 0) || math.IsNaN(n) {
			e.exception(v, "must not be NaN or Inf")
		}
	case 1:
		if math.IsNaN(n) {
			e.buf.WriteString("nan")
			return
		}
	default:
		if math.IsInf(n, 0) || math.IsNaN(n) {
			e.buf.WriteString("null")
			return
		}
	}
	e.buf.WriteString(formatG(n, e.cfg.precision))
}

func (e *jsonEncoder) value(v lua.LValue, depth int) {
	switch v := v.(type) {
	case lua.LString:
		e.str(string(v))
	case lua.LNumber:
		e.number(v, float64(v))
	case lua.LBool:
		if v {
			e.buf.WriteString("true")
		} else {
			e.buf.WriteString("false")
		}
	case *lua.LTable:
		depth++
		if depth > e.cfg.encodeMaxDepth || e.top+3 > luaMaxCStack {
			luaLError(e.L, "Cannot serialise, excessive nesting (%d)", depth)
		}
		v = e.vm.shown(v).(*lua.LTable) // a library table, not its read-only proxy
		if n := e.arrayLength(v); n > 0 {
			e.array(v, n, depth)
		} else {
			e.object(v, depth)
		}
	default:
		if v == lua.LNil || isNullPointer(v) {
			e.buf.WriteString("null")
			return
		}
		e.exception(v, "type not supported")
	}
}

// arrayLength is lua_array_length: the highest index of a table whose keys are
// all positive integers, -1 for any other table (or, unless the sparse setting
// converts it, an error for an excessively sparse array).
func (e *jsonEncoder) arrayLength(t *lua.LTable) int {
	maxIndex, items := int32(0), int32(0)
	array := true
	forEachInOrder(t, func(k, _ lua.LValue) {
		if !array {
			return
		}
		if n, ok := k.(lua.LNumber); ok && n != 0 {
			f := float64(n)
			if math.Floor(f) == f && f >= 1 {
				if f > float64(maxIndex) {
					maxIndex = cInt32(f)
				}
				items++
				return
			}
		}
		array = false
	})
	if !array {
		return -1
	}
	ratio := int32(e.cfg.sparseRatio)
	if ratio > 0 && maxIndex > items*ratio && maxIndex > int32(e.cfg.sparseSafe) {
		if !e.cfg.sparseConvert {
			e.exception(t, "excessively sparse array")
		}
		return -1
	}
	return int(maxIndex)
}

func (e *jsonEncoder) array(t *lua.LTable, n, depth int) {
	e.buf.WriteByte('[')
	e.top++
	for i := 1; i <= n; i++ {
		if i > 1 {
			e.buf.WriteByte(',')
		}
		e.value(t.RawGetInt(i), depth)
	}
	e.top--
	e.buf.WriteByte(']')
}

func (e *jsonEncoder) object(t *lua.LTable, depth int) {
	e.buf.WriteByte('{')
	e.top += 2
	first := true
	forEachInOrder(t, func(k, v lua.LValue) {
		if !first {
			e.buf.WriteByte(',')
		}
		first = false
		switch k := k.(type) {
		case lua.LNumber:
			e.buf.WriteByte('"')
			e.number(k, float64(k))
			e.buf.WriteString(`":`)
		case lua.LString:
			e.str(string(k))
			e.buf.WriteByte(':')
		default:
			e.exception(k, "table key must be a number or string")
		}
		e.value(v, depth)
	})
	e.top -= 2
	e.buf.WriteByte('}')
}

// cInt32 is C's (int) cast of a double on x86-64: out of range and NaN give
// INT_MIN.
func cInt32(f float64) int32 {
	if math.IsNaN(f) || f >= 2147483648.0 || f <= -2147483649.0 {
		return math.MinInt32
	}
	return int32(f)
}

// luaTypeName is lua_typename of a value (a NULL light userdata is "userdata").
func luaTypeName(v lua.LValue) string {
	if isNullPointer(v) {
		return "userdata"
	}
	return v.Type().String()
}

func itoa(n int) string {
	return formatLuaNumber(float64(n))
}

// ---- decoding ----

type jsonToken int

const (
	tObjBegin jsonToken = iota
	tObjEnd
	tArrBegin
	tArrEnd
	tString
	tNumber
	tBoolean
	tNull
	tColon
	tComma
	tEnd
	tWhitespace
	tError
	tUnknown
)

var jsonTokenNames = [...]string{"T_OBJ_BEGIN", "T_OBJ_END", "T_ARR_BEGIN", "T_ARR_END", "T_STRING", "T_NUMBER", "T_BOOLEAN", "T_NULL", "T_COLON", "T_COMMA", "T_END", "T_WHITESPACE", "T_ERROR", "T_UNKNOWN"}

var jsonCh2Token = func() [256]jsonToken {
	var t [256]jsonToken
	for i := range t {
		t[i] = tError
	}
	t['{'], t['}'], t['['], t[']'], t[','], t[':'], t[0] = tObjBegin, tObjEnd, tArrBegin, tArrEnd, tComma, tColon, tEnd
	t[' '], t['\t'], t['\n'], t['\r'] = tWhitespace, tWhitespace, tWhitespace, tWhitespace
	for _, c := range "fiInNt\"+-0123456789" {
		t[c] = tUnknown
	}
	return t
}()

var jsonEscape2Char = func() [256]byte {
	var t [256]byte
	t['"'], t['\\'], t['/'], t['b'], t['t'], t['n'], t['f'], t['r'], t['u'] = '"', '\\', '/', '\b', '\t', '\n', '\f', '\r', 'u'
	return t
}()

// jsonDecoder is one cjson.decode call over data, a C string: reading past
// the end gives NUL, which ends the text.
type jsonDecoder struct {
	L     *lua.LState
	vm    *luaVM
	cfg   *cjsonConfig
	data  string
	ptr   int
	depth int
	top   int
}

type jsonTok struct {
	typ   jsonToken
	index int
	str   string  // a string's value, or an error's text
	num   float64 // a number
	b     bool    // a boolean
}

func (d *jsonDecoder) at(i int) byte {
	if i < len(d.data) {
		return d.data[i]
	}
	return 0
}

func (vm *luaVM) cjsonDecode(L *lua.LState, cfg *cjsonConfig) int {
	if L.GetTop() != 1 {
		luaLArgError(L, 1, "expected 1 argument")
	}
	data := luaLCheckString(L, 1)
	if len(data) >= 2 && (data[0] == 0 || data[1] == 0) {
		luaLError(L, "JSON parser does not support UTF-16 or UTF-32")
	}
	d := &jsonDecoder{L: L, vm: vm, cfg: cfg, data: data, top: 1}
	tok := d.next()
	v := d.value(&tok)
	tok = d.next()
	if tok.typ != tEnd {
		d.parseError("the end", &tok)
	}
	L.Push(v)
	return 1
}

func (d *jsonDecoder) setError(tok *jsonTok, msg string) {
	tok.typ = tError
	tok.index = d.ptr
	tok.str = msg
}

func (d *jsonDecoder) parseError(expected string, tok *jsonTok) {
	found := jsonTokenNames[tok.typ]
	if tok.typ == tError {
		found = tok.str
	}
	luaLError(d.L, "Expected %s but found %s at character %d", expected, found, tok.index+1)
}

func (d *jsonDecoder) next() jsonTok {
	var tok jsonTok
	var c byte
	for {
		c = d.at(d.ptr)
		tok.typ = jsonCh2Token[c]
		if tok.typ != tWhitespace {
			break
		}
		d.ptr++
	}
	tok.index = d.ptr
	switch tok.typ {
	case tError:
		d.setError(&tok, "invalid token")
		return tok
	case tEnd:
		return tok
	case tUnknown:
	default:
		d.ptr++
		return tok
	}
	rest := d.data[d.ptr:]
	switch {
	case c == '"':
		d.stringToken(&tok)
	case c == '-' || (c >= '0' && c <= '9'):
		if !d.cfg.decodeInvalid && d.invalidNumber() {
			d.setError(&tok, "invalid number")
			return tok
		}
		d.numberToken(&tok)
	case strings.HasPrefix(rest, "true"):
		tok.typ, tok.b = tBoolean, true
		d.ptr += 4
	case strings.HasPrefix(rest, "false"):
		tok.typ, tok.b = tBoolean, false
		d.ptr += 5
	case strings.HasPrefix(rest, "null"):
		tok.typ = tNull
		d.ptr += 4
	case d.cfg.decodeInvalid && d.invalidNumber():
		d.numberToken(&tok)
	default:
		d.setError(&tok, "invalid token")
	}
	return tok
}

// invalidNumber is json_is_invalid_number: what strtod takes but JSON does
// not (a leading '+', hex, leading zeros, inf, nan).
func (d *jsonDecoder) invalidNumber() bool {
	p := d.ptr
	if d.at(p) == '+' {
		return true
	}
	if d.at(p) == '-' {
		p++
	}
	if d.at(p) == '0' {
		c2 := d.at(p + 1)
		return c2|0x20 == 'x' || (c2 >= '0' && c2 <= '9')
	} else if d.at(p) <= '9' {
		return false
	}
	rest := strings.ToLower(d.data[min(p, len(d.data)):])
	return strings.HasPrefix(rest, "inf") || strings.HasPrefix(rest, "nan")
}

func (d *jsonDecoder) numberToken(tok *jsonTok) {
	tok.typ = tNumber
	end := len(d.data)
	if i := strings.IndexByte(d.data[d.ptr:], 0); i >= 0 {
		end = d.ptr + i
	}
	v, n := strtodPrefix(d.data[d.ptr:end])
	if n == 0 {
		d.setError(tok, "invalid number")
		return
	}
	tok.num = v
	d.ptr += n
}

func hexDigit(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c|0x20 >= 'a' && c|0x20 <= 'f':
		return int(c|0x20-'a') + 10
	}
	return -1
}

func (d *jsonDecoder) hex4(p int) int {
	v := 0
	for i := range 4 {
		h := hexDigit(d.at(p + i))
		if h < 0 {
			return -1
		}
		v = v<<4 | h
	}
	return v
}

func (d *jsonDecoder) stringToken(tok *jsonTok) {
	d.ptr++ // the opening quote
	var b strings.Builder
	for {
		c := d.at(d.ptr)
		if c == '"' {
			break
		}
		if c == 0 {
			d.setError(tok, "unexpected end of string")
			return
		}
		if c == '\\' {
			esc := jsonEscape2Char[d.at(d.ptr+1)]
			if esc == 'u' {
				if d.unicodeEscape(&b) {
					continue
				}
				d.setError(tok, "invalid unicode escape code")
				return
			}
			if esc == 0 {
				d.setError(tok, "invalid escape code")
				return
			}
			d.ptr++
			c = esc
		}
		b.WriteByte(c)
		d.ptr++
	}
	d.ptr++ // the closing quote
	tok.typ = tString
	tok.str = b.String()
}

// unicodeEscape is json_append_unicode_escape: \uXXXX (or a surrogate pair)
// at ptr, as UTF-8.
func (d *jsonDecoder) unicodeEscape(b *strings.Builder) bool {
	escapeLen := 6
	cp := d.hex4(d.ptr + 2)
	if cp < 0 {
		return false
	}
	if cp&0xF800 == 0xD800 {
		if cp&0x400 != 0 {
			return false
		}
		if d.at(d.ptr+escapeLen) != '\\' || d.at(d.ptr+escapeLen+1) != 'u' {
			return false
		}
		low := d.hex4(d.ptr + 2 + escapeLen)
		if low < 0 || low&0xFC00 != 0xDC00 {
			return false
		}
		cp = ((cp&0x3FF)<<10 | low&0x3FF) + 0x10000
		escapeLen = 12
	}
	switch {
	case cp <= 0x7F:
		b.WriteByte(byte(cp))
	case cp <= 0x7FF:
		b.WriteByte(byte(cp>>6) | 0xC0)
		b.WriteByte(byte(cp&0x3F) | 0x80)
	case cp <= 0xFFFF:
		b.WriteByte(byte(cp>>12) | 0xE0)
		b.WriteByte(byte(cp>>6&0x3F) | 0x80)
		b.WriteByte(byte(cp&0x3F) | 0x80)
	default:
		b.WriteByte(byte(cp>>18) | 0xF0)
		b.WriteByte(byte(cp>>12&0x3F) | 0x80)
		b.WriteByte(byte(cp>>6&0x3F) | 0x80)
		b.WriteByte(byte(cp&0x3F) | 0x80)
	}
	d.ptr += escapeLen
	return true
}

func (d *jsonDecoder) descend(slots int) {
	d.depth++
	if d.depth <= d.cfg.decodeMaxDepth && d.top+slots <= luaMaxCStack {
		return
	}
	luaLError(d.L, "Found too many nested data structures (%d) at character %d", d.depth, d.ptr)
}

func (d *jsonDecoder) value(tok *jsonTok) lua.LValue {
	switch tok.typ {
	case tString:
		return lua.LString(tok.str)
	case tNumber:
		return lua.LNumber(tok.num)
	case tBoolean:
		return lua.LBool(tok.b)
	case tObjBegin:
		return d.container(true)
	case tArrBegin:
		return d.container(false)
	case tNull:
		return d.vm.null
	}
	d.parseError("value", tok)
	return nil
}

// container decodes an object (after its '{') or an array (after its '['),
// as cjson's parse_object_context and parse_array_context do.
func (d *jsonDecoder) container(object bool) lua.LValue {
	end, slots, expected := tArrEnd, 2, "comma or array end"
	if object {
		end, slots, expected = tObjEnd, 3, "comma or object end"
	}
	d.descend(slots)
	t := d.L.NewTable()
	d.top++
	defer func() { d.top-- }()
	tok := d.next()
	if tok.typ == end {
		d.depth--
		return t
	}
	for i := 1; ; i++ {
		if object {
			d.member(t, &tok)
		} else {
			t.RawSetInt(i, d.value(&tok))
		}
		tok = d.next()
		if tok.typ == end {
			d.depth--
			return t
		}
		if tok.typ != tComma {
			d.parseError(expected, &tok)
		}
		tok = d.next()
	}
}

// member decodes one "key": value of an object into t; tok is the key.
func (d *jsonDecoder) member(t *lua.LTable, tok *jsonTok) {
	if tok.typ != tString {
		d.parseError("object key string", tok)
	}
	key := lua.LString(tok.str)
	d.top++
	*tok = d.next()
	if tok.typ != tColon {
		d.parseError("colon", tok)
	}
	*tok = d.next()
	v := d.value(tok)
	d.top--
	t.RawSet(key, v)
}
