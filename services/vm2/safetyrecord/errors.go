package safetyrecord

import (
	"errors"
	"fmt"
)

// Sentinel errors, matched with errors.Is.
var (
	// ErrInvalidRecord: a record given to an Encode function breaks its type's
	// rules (an unknown verdict, a string that is not an identifier, too many
	// entries).
	ErrInvalidRecord = errors.New("invalid cache record")
	// ErrTooLarge: a record's encoding exceeds its key's max_bytes in keyspec.yaml.
	ErrTooLarge = errors.New("cache record too large")
	// ErrCorrupt: a stored value is not a valid record of its key's kind (bad
	// MessagePack, another kind, a field that breaks the rules, trailing bytes).
	ErrCorrupt = errors.New("corrupt cache value")
	// ErrInvalidWakeup: a wake-up that may not be published, or a payload that is not one.
	ErrInvalidWakeup = errors.New("invalid wake-up")
)

// RecordError says which record and field broke which rule. It never holds the
// field's value, which may be hostile or personal.
type RecordError struct {
	Record string // text, verdict, link, dns or wakeup
	Field  string // e.g. "rule_ids[3]"
	Reason string
	// Err is the sentinel the error matches: ErrInvalidRecord, ErrTooLarge,
	// ErrCorrupt or ErrInvalidWakeup, perhaps wrapping msgpackcheck.ErrMalformed.
	Err error
}

func (e *RecordError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("safety: %s record: %s: %v", e.Record, e.Reason, e.Err)
	}
	return fmt.Sprintf("safety: %s record: %s: %s: %v", e.Record, e.Field, e.Reason, e.Err)
}

// Unwrap is the sentinel the error matches (with, for a value that is not one
// well-formed MessagePack value within its limit, msgpackcheck.ErrMalformed).
func (e *RecordError) Unwrap() error { return e.Err }

func invalid(record, field, reason string) error {
	return &RecordError{Record: record, Field: field, Reason: reason, Err: ErrInvalidRecord}
}

// corrupt re-labels a rule broken by a decoded value: the stored bytes, not the
// caller, are at fault.
func corrupt(record string, err error) error {
	var re *RecordError
	if errors.As(err, &re) {
		return &RecordError{Record: re.Record, Field: re.Field, Reason: re.Reason, Err: ErrCorrupt}
	}
	return &RecordError{Record: record, Reason: err.Error(), Err: ErrCorrupt}
}
