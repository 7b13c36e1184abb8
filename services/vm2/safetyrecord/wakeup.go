package safetyrecord

import "github.com/hanchat/luagen/generated/vm2"

// WakeReason says why a worker is woken. A wake-up carries nothing else: no task
// id, no document; the worker claims its tasks from PostgreSQL (seed 004 §1).
type WakeReason string

// Wake reasons.
const (
	// WakeTasksReady is published when safety tasks were queued in PostgreSQL.
	WakeTasksReady WakeReason = "tasks_ready"
	// WakeSubscribed is never published: a waker.Subscription delivers it itself
	// each time its subscription is (re)established, because notifications sent
	// while it was not may be lost. Poll once on it.
	WakeSubscribed WakeReason = "subscribed"
)

// Wakeup is one notification on han:safety:wakeup.
type Wakeup struct {
	Reason WakeReason
}

const tagWakeup = "wakeup/1"

// EncodeWakeup encodes a wake-up that may be published (Reason
// WakeTasksReady): ["wakeup/1", reason]; else ErrInvalidWakeup.
func EncodeWakeup(w Wakeup) ([]byte, error) {
	if w.Reason != WakeTasksReady {
		return nil, &RecordError{Record: "wakeup", Field: "reason", Reason: "not a reason that is published", Err: ErrInvalidWakeup}
	}
	e := newEncoder(tagWakeup, 1)
	e.str(string(w.Reason))
	b, err := e.bytes()
	if err == nil && len(b) > vm2.SafetyWakeupChannelMaxBytes {
		err = &RecordError{Record: "wakeup", Reason: "payload above the channel's max_bytes", Err: ErrInvalidWakeup}
	}
	return b, err
}

// DecodeWakeup decodes and checks a wake-up payload; any fault is
// ErrInvalidWakeup.
func DecodeWakeup(b []byte) (Wakeup, error) {
	d := newDecoder("wakeup", b, vm2.SafetyWakeupChannelMaxBytes, tagWakeup, 1, ErrInvalidWakeup)
	w := Wakeup{Reason: WakeReason(d.str("reason", 32))}
	if err := d.finish(); err != nil {
		return Wakeup{}, err
	}
	if w.Reason != WakeTasksReady {
		return Wakeup{}, &RecordError{Record: "wakeup", Field: "reason", Reason: "not a published reason", Err: ErrInvalidWakeup}
	}
	return w, nil
}
