package runtime

import (
	"fmt"
	"strconv"
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
	vals   []any
	single any  // a one-value reply
	one    bool // single is the reply
	next   int
	err    error
}

// ArrayReply starts decoding an array reply of exactly n fields.
func ArrayReply(script string, v any, n int) Reply {
	r := Reply{script: script}
	arr, ok := v.([]any)
	switch {
	case !ok:
		r.err = &ReplyError{Script: script, Reason: fmt.Sprintf("want an array of %d fields, got %s", n, kind(v))}
	case len(arr) != n:
		r.err = &ReplyError{Script: script, Reason: fmt.Sprintf("want an array of %d fields, got %d", n, len(arr))}
	default:
		r.vals = arr
	}
	return r
}

// ArrayReply is ArrayReply for a reply of s.
func (s *Script) ArrayReply(v any, n int) Reply { return ArrayReply(s.name, v, n) }

// ValueReply is ValueReply for a reply of s.
func (s *Script) ValueReply(v any) Reply { return ValueReply(s.name, v) }

// ValueReply starts decoding a reply that is one value.
func ValueReply(script string, v any) Reply {
	return Reply{script: script, single: v, one: true}
}

// Err is the first problem met, a *ReplyError, or nil.
func (r *Reply) Err() error { return r.err }

func (r *Reply) take(field string) (any, bool) {
	v, ok := r.peek(field)
	if ok {
		r.next++
	}
	return v, ok
}

// peek is the next value without consuming it.
func (r *Reply) peek(field string) (any, bool) {
	if r.err != nil {
		return nil, false
	}
	if r.one && r.next == 0 {
		return r.single, true
	}
	if r.one || r.next >= len(r.vals) {
		r.err = &ReplyError{Script: r.script, Field: r.path + field, Reason: "missing"}
		return nil, false
	}
	return r.vals[r.next], true
}

func (r *Reply) fail(field, want string, v any) {
	r.err = &ReplyError{Script: r.script, Field: r.path + field, Reason: fmt.Sprintf("want %s, got %s", want, kind(v))}
}

// Nil reports whether the next field is nil (the script answered false for a
// nullable field), and consumes it when it is.
func (r *Reply) Nil(field string) bool {
	v, ok := r.peek(field)
	if ok && v == nil {
		r.next++
		return true
	}
	return false
}

// Nullable reads a nullable field: nil when the script answered false (nil),
// else read's value.
func Nullable[T any](r *Reply, field string, read func(field string) T) *T {
	if r.Nil(field) {
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
	v, ok := r.take(field)
	if !ok || v == nil {
		return nil
	}
	arr, ok := v.([]any)
	if !ok {
		r.fail(field, "an array", v)
		return nil
	}
	out := make([]T, len(arr))
	for i, ev := range arr {
		at := r.path + field + "[" + strconv.Itoa(i) + "]"
		e := Reply{script: r.script, path: at + "."}
		switch ea, ok := ev.([]any); {
		case !ok:
			r.err = &ReplyError{Script: r.script, Field: at, Reason: fmt.Sprintf("want an array of %d fields, got %s", n, kind(ev))}
			return nil
		case len(ea) != n:
			r.err = &ReplyError{Script: r.script, Field: at, Reason: fmt.Sprintf("want an array of %d fields, got %d", n, len(ea))}
			return nil
		default:
			e.vals = ea
		}
		out[i] = decode(&e)
		if e.err != nil {
			r.err = e.err
			return nil
		}
	}
	return out
}

// Int reads an integer field.
func (r *Reply) Int(field string) int64 {
	v, ok := r.take(field)
	if !ok {
		return 0
	}
	n, ok := v.(int64)
	if !ok {
		r.fail(field, "an integer", v)
	}
	return n
}

// Bool reads a boolean field: integer 0 or 1, a RESP3 boolean, or nil (Lua false).
func (r *Reply) Bool(field string) bool {
	v, ok := r.take(field)
	if !ok {
		return false
	}
	switch b := v.(type) {
	case int64:
		if b == 0 || b == 1 {
			return b == 1
		}
	case bool:
		return b
	case nil:
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
	switch s := v.(type) {
	case string:
		return s
	case nil:
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
	switch s := v.(type) {
	case string:
		return []byte(s)
	case nil:
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
	v, ok := r.take(field)
	if !ok {
		return nil
	}
	arr, ok := v.([]any)
	if !ok {
		if v == nil {
			return nil
		}
		r.fail(field, "an array of strings", v)
		return nil
	}
	out := make([]string, len(arr))
	for i, e := range arr {
		s, ok := e.(string)
		if !ok {
			r.fail(field+"["+strconv.Itoa(i)+"]", "a string", e)
			return nil
		}
		out[i] = s
	}
	return out
}

// kind names a reply value's type without showing the value.
func kind(v any) string {
	switch v := v.(type) {
	case nil:
		return "nil"
	case int64:
		return "an integer"
	case string:
		return "a string"
	case []any:
		return fmt.Sprintf("an array of %d", len(v))
	case bool:
		return "a boolean"
	default:
		return fmt.Sprintf("%T", v)
	}
}
