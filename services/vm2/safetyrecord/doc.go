// Package safetyrecord is the values Message Safety keeps in its Redis (vm2):
// the typed MessagePack records of the hot caches (TextResult, FileVerdict,
// LinkPolicy, DNSAnswer), each under its Kind, and the Wakeup published on
// han:safety:wakeup.
//
// Records hold rule ids, verdicts, classifications and DNS answers, each
// validated and size-limited on the way in (Encode*, ErrInvalidRecord,
// ErrTooLarge) and on the way out (Decode*, ErrCorrupt). No record has a field
// for raw message text, file bytes, presigned URLs or task and lease
// documents, and a string that looks like one (a URL with a signature query,
// free text) is refused. Every error is a *RecordError naming the record, the
// field and the rule, never the value.
//
// Every record is one MessagePack array: its tag ("text/1", ...), then its
// fields in a fixed order. A decoder first has msgpackcheck.Check check that
// the value is exactly one well-formed MessagePack value within the key's
// max_bytes, then reads each field, checking its type and length before it
// allocates anything: a damaged or hostile value costs at most its own size
// and never panics.
package safetyrecord
