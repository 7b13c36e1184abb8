package runtime

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Reply decodes a script's reply field by field, the way generated code reads it.
// The first problem sticks: later reads return zero values and Err reports it.
//
// A Reply is a value meant to live on the caller's stack: decoding allocates
// nothing unless the reply has the wrong shape.
type Reply struct {
	script string
	path   string // "entries[2]." for an element of a list field
	vals   Value  // the array of fields
	single Value  // a one-value reply
	one    bool   // single is the reply
	next   int
	err    error
}

// Values is an array reply a backend hands over without boxing its elements
// into a []any (runtime/rueidisbackend: rueidis's own messages): a generated
// decoder reads it as it reads a go-redis []any, field by field. A Backend may
// return one, as any, wherever go-redis would answer a []any.
type Values interface {
	Len() int
	At(i int) Value
}

// Value is one reply value as a Values hands it over, made by IntValue,
// StringValue, BoolValue, NilValue, ArrayValue or OtherValue.
type Value struct {
	kind valueKind
	n    int64
	s    string // a string, or OtherValue's type
	arr  Values
	anys []any
}

type valueKind uint8

const (
	kindNil valueKind = iota
	kindInt
	kindString
	kindBool
	kindArray
	kindOther
)

// IntValue is an integer reply.
func IntValue(n int64) Value { return Value{kind: kindInt, n: n} }

// StringValue is a bulk or simple string reply.
func StringValue(s string) Value { return Value{kind: kindString, s: s} }

// BoolValue is a RESP3 boolean reply.
func BoolValue(b bool) Value {
	v := Value{kind: kindBool}
	if b {
		v.n = 1
	}
	return v
}

// NilValue is a nil reply (Lua false).
func NilValue() Value { return Value{} }

// ArrayValue is an array reply.
func ArrayValue(a Values) Value { return Value{kind: kindArray, arr: a} }

// OtherValue is a reply of a type no decoder reads (a double, a map, ...),
// named by typ in errors.
func OtherValue(typ string) Value { return Value{kind: kindOther, s: typ} }

// valueOf is v, a value as go-redis decodes it (or a Values), as a Value.
func valueOf(v any) Value {
	switch v := v.(type) {
	case nil:
		return Value{}
	case int64:
		return IntValue(v)
	case string:
		return StringValue(v)
	case bool:
		return BoolValue(v)
	case []any:
		return Value{kind: kindArray, anys: v}
	case Values:
		return ArrayValue(v)
	default:
		return OtherValue(fmt.Sprintf("%T", v))
	}
}

// len and at read an array Value.
func (v Value) len() int {
	if v.arr != nil {
		return v.arr.Len()
	}
	return len(v.anys)
}

func (v Value) at(i int) Value {
	if v.arr != nil {
		return v.arr.At(i)
	}
	return valueOf(v.anys[i])
}

// arrayReply starts decoding an array reply of script of exactly n fields.
func arrayReply(script string, v any, n int) Reply {
	r := Reply{script: script}
	val := valueOf(v)
	switch {
	case val.kind != kindArray:
		r.err = &ReplyError{Script: script, Reason: fmt.Sprintf("want an array of %d fields, got %s", n, kind(val))}
	case val.len() != n:
		r.err = &ReplyError{Script: script, Reason: fmt.Sprintf("want an array of %d fields, got %d", n, val.len())}
	default:
		r.vals = val
	}
	return r
}

// ArrayReply starts decoding a reply of s that is an array of exactly n fields.
func (s *Script) ArrayReply(v any, n int) Reply { return arrayReply(s.name, v, n) }

// ValueReply starts decoding a reply of s that is one value.
func (s *Script) ValueReply(v any) Reply { return valueReply(s.name, v) }

// valueReply starts decoding a reply of script that is one value.
func valueReply(script string, v any) Reply {
	return Reply{script: script, single: valueOf(v), one: true}
}

// Err is the first problem met, a *ReplyError, or nil.
func (r *Reply) Err() error { return r.err }

func (r *Reply) take(field string) (Value, bool) {
	v, ok := r.peek(field)
	if ok {
		r.next++
	}
	return v, ok
}

// peek is the next value without consuming it.
func (r *Reply) peek(field string) (Value, bool) {
	if r.err != nil {
		return Value{}, false
	}
	if r.one && r.next == 0 {
		return r.single, true
	}
	if r.one || r.next >= r.vals.len() {
		r.err = &ReplyError{Script: r.script, Field: r.path + field, Reason: "missing"}
		return Value{}, false
	}
	return r.vals.at(r.next), true
}

func (r *Reply) fail(field, want string, v Value) {
	r.err = &ReplyError{Script: r.script, Field: r.path + field, Reason: fmt.Sprintf("want %s, got %s", want, kind(v))}
}

// array takes the next field, an array (want, for the error): ok is false
// when there is none, for nil (false, or an empty table), and for a value of
// another kind, which fails.
func (r *Reply) array(field, want string) (Value, bool) {
	v, ok := r.take(field)
	if !ok || v.kind == kindNil {
		return v, false
	}
	if v.kind != kindArray {
		r.fail(field, want, v)
		return v, false
	}
	return v, true
}

// null reports whether the next field is nil (the script answered false for a
// nullable field), and consumes it when it is.
func (r *Reply) null(field string) bool {
	v, ok := r.peek(field)
	if ok && v.kind == kindNil {
		r.next++
		return true
	}
	return false
}

// Nullable reads a nullable field: nil when the script answered false (nil),
// else read's value.
func Nullable[T any](r *Reply, field string, read func(field string) T) *T {
	if r.null(field) {
		return nil
	}
	v := read(field)
	if r.err != nil {
		return nil
	}
	return &v
}

// List reads a field holding an array of elements, each an array of n fields
// that decode reads in order. nil (false, or an empty table) reads as nil.
// Errors name the element: "entries[2].id".
func List[T any](r *Reply, field string, n int, decode func(e *Reply) T) []T {
	return elements(r, field, "an array", func(i int, ev Value) (out T) {
		at := r.path + field + "[" + strconv.Itoa(i) + "]"
		e := Reply{script: r.script, path: at + "."}
		switch {
		case ev.kind != kindArray:
			r.err = &ReplyError{Script: r.script, Field: at, Reason: fmt.Sprintf("want an array of %d fields, got %s", n, kind(ev))}
			return out
		case ev.len() != n:
			r.err = &ReplyError{Script: r.script, Field: at, Reason: fmt.Sprintf("want an array of %d fields, got %d", n, ev.len())}
			return out
		default:
			e.vals = ev
		}
		if out = decode(&e); e.err != nil {
			r.err = e.err
		}
		return out
	})
}

// elements reads a field holding an array (want, for the error) into a slice
// of its elements, element i read from ev by read; an error read sets on r
// stops it, and the field reads as nil.
func elements[T any](r *Reply, field, want string, read func(i int, ev Value) T) []T {
	v, ok := r.array(field, want)
	if !ok {
		return nil
	}
	out := make([]T, v.len())
	for i := range out {
		if out[i] = read(i, v.at(i)); r.err != nil {
			return nil
		}
	}
	return out
}

// ListOf reads a field holding an array whose elements are each one value,
// which read reads as it reads a field of that type ((*Reply).Int,
// (*Reply).Strings, ...). nil (false, or an empty table) reads as nil. Errors
// name the element: "counts[2]".
func ListOf[T any](r *Reply, field string, read func(e *Reply, field string) T) []T {
	// One element reader for all: read may keep it (it escapes), so a reader
	// per element would cost an allocation each.
	e := &Reply{script: r.script, path: r.path, one: true}
	return elements(r, field, "an array", func(i int, ev Value) T {
		e.single, e.next = ev, 0
		out := read(e, field)
		if e.err != nil {
			// The element's error names field; name the element instead
			// (built only here: a good reply builds no name per element).
			if re, ok := e.err.(*ReplyError); ok {
				at := r.path + field
				re.Field = at + "[" + strconv.Itoa(i) + "]" + strings.TrimPrefix(re.Field, at)
			}
			r.err = e.err
		}
		return out
	})
}

// Int reads an integer field.
func (r *Reply) Int(field string) int64 {
	v, ok := r.take(field)
	if !ok {
		return 0
	}
	if v.kind != kindInt {
		r.fail(field, "an integer", v)
		return 0
	}
	return v.n
}

// Bool reads a boolean field: integer 0 or 1, a RESP3 boolean, or nil (Lua false).
func (r *Reply) Bool(field string) bool {
	v, ok := r.take(field)
	if !ok {
		return false
	}
	switch v.kind {
	case kindInt:
		if v.n == 0 || v.n == 1 {
			return v.n == 1
		}
	case kindBool:
		return v.n == 1
	case kindNil:
		return false
	}
	r.fail(field, "0 or 1", v)
	return false
}

// String reads a bulk string field; nil (Lua false) reads as "".
func (r *Reply) String(field string) string {
	v, ok := r.take(field)
	if !ok {
		return ""
	}
	switch v.kind {
	case kindString:
		return v.s
	case kindNil:
		return ""
	}
	r.fail(field, "a string", v)
	return ""
}

// Bytes reads a bulk string field as bytes; nil (Lua false) reads as nil.
func (r *Reply) Bytes(field string) []byte {
	v, ok := r.take(field)
	if !ok {
		return nil
	}
	switch v.kind {
	case kindString:
		return []byte(v.s)
	case kindNil:
		return nil
	}
	r.fail(field, "a string", v)
	return nil
}

// Duration reads a field holding whole milliseconds.
func (r *Reply) Duration(field string) time.Duration {
	ms := r.Int(field)
	if r.err == nil && ms < 0 {
		r.err = &ReplyError{Script: r.script, Field: r.path + field, Reason: "negative duration"}
	}
	return time.Duration(ms) * time.Millisecond
}

// Time reads a field holding a Unix time in milliseconds.
func (r *Reply) Time(field string) time.Time {
	ms := r.Int(field)
	if r.err != nil {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// Enum reads a string field that must be one of values.
func (r *Reply) Enum(field string, values []string) string {
	s := r.String(field)
	if r.err != nil {
		return ""
	}
	for _, v := range values {
		if v == s {
			return s
		}
	}
	r.err = &ReplyError{Script: r.script, Field: r.path + field, Reason: fmt.Sprintf("not one of the %d declared values", len(values))}
	return ""
}

// Strings reads an array of bulk strings.
func (r *Reply) Strings(field string) []string {
	return elements(r, field, "an array of strings", func(i int, e Value) string {
		if e.kind != kindString {
			r.fail(field+"["+strconv.Itoa(i)+"]", "a string", e)
		}
		return e.s
	})
}

// kind names a reply value's type without showing the value.
func kind(v Value) string {
	switch v.kind {
	case kindNil:
		return "nil"
	case kindInt:
		return "an integer"
	case kindString:
		return "a string"
	case kindArray:
		return fmt.Sprintf("an array of %d", v.len())
	case kindBool:
		return "a boolean"
	default:
		return v.s
	}
}
