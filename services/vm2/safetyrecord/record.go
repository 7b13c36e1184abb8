package safetyrecord

import (
	"fmt"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/hanchat/luagen/generated/vm2"
)

// Kind is one of the four hot caches; it is also the kind label of the cache metrics.
type Kind string

// The hot caches of seed 004 §3.
const (
	KindText    Kind = "text"    // han:safety:text:*: text-rules results
	KindVerdict Kind = "verdict" // han:safety:verdict:*: file verdicts
	KindLink    Kind = "link"    // han:safety:link:*: local link-policy results
	KindDNS     Kind = "dns"     // han:safety:dns:*: DNS answers
)

// Kinds lists every Kind.
var Kinds = []Kind{KindText, KindVerdict, KindLink, KindDNS}

// Verdict is what Message Safety decided about a text, a file or a link.
type Verdict string

// Verdicts.
const (
	VerdictAllow   Verdict = "allow"   // deliver
	VerdictMonitor Verdict = "monitor" // deliver and record the matched monitor rules
	VerdictReview  Verdict = "review"  // hold for a moderator
	VerdictBlock   Verdict = "block"   // refuse
)

// Valid reports whether v is a declared Verdict.
func (v Verdict) Valid() bool {
	switch v {
	case VerdictAllow, VerdictMonitor, VerdictReview, VerdictBlock:
		return true
	}
	return false
}

// LinkClass is the local link policy's classification of a URL.
type LinkClass string

// Link classifications.
const (
	LinkTrusted    LinkClass = "trusted"    // on an allow-list
	LinkUnknown    LinkClass = "unknown"    // no rule matched
	LinkSuspicious LinkClass = "suspicious" // a heuristic matched
	LinkMalicious  LinkClass = "malicious"  // on a block-list
)

// Valid reports whether c is a declared LinkClass.
func (c LinkClass) Valid() bool {
	switch c {
	case LinkTrusted, LinkUnknown, LinkSuspicious, LinkMalicious:
		return true
	}
	return false
}

// Bounds of record fields. With the identifier format they leave no room for message
// text, file bytes, URLs or documents.
const (
	// MaxIDLen bounds a rule id: 1..64 characters of [A-Za-z0-9._:-], starting with a
	// letter or digit.
	MaxIDLen = 64
	// MaxRuleIDs bounds each list of rule ids of a record.
	MaxRuleIDs = 256
	// MaxDNSAddrs, MaxDNSHosts, MaxDNSMX and MaxDNSTXT bound the records of a DNSAnswer.
	MaxDNSAddrs = 64
	MaxDNSHosts = 16
	MaxDNSMX    = 16
	MaxDNSTXT   = 16
	// MaxTXTLen bounds one TXT string (DNS's own character-string limit).
	MaxTXTLen = 255
	// maxHostLen bounds a DNS name in presentation form, without the final dot.
	maxHostLen = 253
)

// TextResult is the hot result of the text rules for one analysis hash under one
// rules version (han:safety:text:{analysis_hash}:{rules_version}). It holds rule
// ids, never the text.
type TextResult struct {
	Verdict Verdict
	// RuleIDs are the enforced rules that matched.
	RuleIDs []string
	// MonitorRuleIDs are the monitor-only rules that matched (recorded, not enforced).
	MonitorRuleIDs []string
}

// FileVerdict is the hot verdict for one file content hash under one config version
// and detector bundle (han:safety:verdict:...). It never holds the file's bytes.
type FileVerdict struct {
	Verdict Verdict
	// RuleIDs are the detector rules or signatures that matched.
	RuleIDs []string
}

// LinkPolicy is the stable local link-policy result for one URL hash
// (han:safety:link:...). It never holds the URL.
type LinkPolicy struct {
	Class   LinkClass
	Verdict Verdict
	// RuleIDs are the link rules that matched.
	RuleIDs []string
}

// DNSAnswer is a DNS answer for one host hash and record type (han:safety:dns:...):
// only the answer; its classification is recomputed under the current policy each
// time it is used. The record type's field holds the data, the others stay empty; an
// answer with no data is NODATA, or NXDOMAIN when NXDomain is set.
type DNSAnswer struct {
	RRType   vm2.DNSRRType
	NXDomain bool
	// TTL is the answer's own TTL when it is set (the cache keeps it at most 900 s,
	// or the active policy's DNSMaxTTL when lower; 0 or less: not cached), and what is
	// left of it when the answer is read from the cache.
	TTL   time.Duration
	Addrs []netip.Addr // A (IPv4) or AAAA (IPv6)
	Hosts []string     // CNAME (at most one) or NS targets
	MX    []MX         // MX
	TXT   []string     // TXT strings, printable ASCII, at most 255 bytes each
}

// MX is one mail exchanger of an MX answer.
type MX struct {
	Preference uint16
	Host       string
}

// Record tags: kind and format version, the first element of every encoded record.
const (
	tagText    = "text/1"
	tagVerdict = "verdict/1"
	tagLink    = "link/1"
	tagDNS     = "dns/1"
)

// maxBytes is each kind's max_bytes from keyspec.yaml.
func maxBytes(k Kind) int {
	switch k {
	case KindText:
		return vm2.SafetyTextMaxBytes
	case KindVerdict:
		return vm2.SafetyVerdictMaxBytes
	case KindLink:
		return vm2.SafetyLinkMaxBytes
	default:
		return vm2.SafetyDNSMaxBytes
	}
}

// sized is the encoded record, refused when above its key's max_bytes.
func (w *encoder) sized(k Kind) ([]byte, error) {
	b, err := w.bytes()
	if err != nil {
		return nil, err
	}
	if max := maxBytes(k); len(b) > max {
		return nil, &RecordError{Record: string(k), Reason: fmt.Sprintf("%d bytes encoded, the key allows %d", len(b), max), Err: ErrTooLarge}
	}
	return b, nil
}

// ---- validation ----

// idProblem is why s is not a rule id, or "".
func idProblem(s string) string {
	switch {
	case s == "":
		return "empty"
	case presignedURL(s):
		return "looks like a presigned URL"
	case looksLikeURL(s):
		return "looks like a URL"
	case len(s) > MaxIDLen:
		return fmt.Sprintf("%d bytes: free text, not an identifier of at most %d", len(s), MaxIDLen)
	case strings.ContainsAny(s, " \t\r\n"):
		return "contains white space: free text, not an identifier"
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
		if i == 0 && !alnum || !alnum && c != '.' && c != '_' && c != ':' && c != '-' {
			return "not an identifier ([A-Za-z0-9._:-], starting with a letter or digit)"
		}
	}
	return ""
}

func checkIDs(record, field string, ids []string) error {
	if len(ids) > MaxRuleIDs {
		return invalid(record, field, fmt.Sprintf("%d ids, at most %d", len(ids), MaxRuleIDs))
	}
	for i, id := range ids {
		if p := idProblem(id); p != "" {
			return invalid(record, fmt.Sprintf("%s[%d]", field, i), p)
		}
	}
	return nil
}

// looksLikeURL: a scheme, a www. host or a query string.
func looksLikeURL(s string) bool {
	l := strings.ToLower(s)
	return strings.Contains(l, "://") || strings.HasPrefix(l, "www.") || strings.Contains(l, "?") && strings.Contains(l, "=")
}

// signatureParams are query parameters that make a URL a capability: presigned S3,
// GCS and Azure SAS URLs, and links carrying a token.
var signatureParams = map[string]bool{
	"x-amz-signature": true, "x-amz-credential": true, "x-amz-security-token": true,
	"x-goog-signature": true, "x-goog-credential": true, "awsaccesskeyid": true,
	"signature": true, "sig": true, "token": true, "access_token": true,
}

// presignedURL reports whether s holds a URL (or a bare query) with a signature or
// token parameter.
func presignedURL(s string) bool {
	if !strings.Contains(s, "?") {
		return false
	}
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == '\t' || r == '"' || r == '\'' }) {
		_, query, ok := strings.Cut(f, "?")
		if !ok {
			continue
		}
		q, err := url.ParseQuery(query)
		if err != nil {
			// A query Go cannot parse may still carry a signature: look at its names.
			q = url.Values{}
			for _, kv := range strings.Split(query, "&") {
				name, _, _ := strings.Cut(kv, "=")
				q[name] = nil
			}
		}
		for name := range q {
			if signatureParams[strings.ToLower(name)] {
				return true
			}
		}
	}
	return false
}

func checkVerdict(record string, v Verdict) error {
	if !v.Valid() {
		return invalid(record, "verdict", "not a declared verdict")
	}
	return nil
}

// hostProblem is why s is not a DNS name in presentation form, or "".
func hostProblem(s string) string {
	if s == "." {
		return "" // the root: a null MX (RFC 7505)
	}
	name := strings.TrimSuffix(s, ".")
	if name == "" || len(name) > maxHostLen {
		return fmt.Sprintf("want a DNS name of 1..%d characters", maxHostLen)
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" || len(label) > 63 {
			return "a label is empty or longer than 63 characters"
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return "not a DNS name ([A-Za-z0-9_-] labels)"
			}
		}
	}
	return ""
}

func txtProblem(s string) string {
	if len(s) > MaxTXTLen {
		return fmt.Sprintf("%d bytes: over-long free text, at most %d", len(s), MaxTXTLen)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return "not printable ASCII"
		}
	}
	if presignedURL(s) {
		return "holds a presigned URL"
	}
	return ""
}

func (r TextResult) validate() error {
	if err := checkVerdict(string(KindText), r.Verdict); err != nil {
		return err
	}
	if err := checkIDs(string(KindText), "rule_ids", r.RuleIDs); err != nil {
		return err
	}
	return checkIDs(string(KindText), "monitor_rule_ids", r.MonitorRuleIDs)
}

func (r FileVerdict) validate() error {
	if err := checkVerdict(string(KindVerdict), r.Verdict); err != nil {
		return err
	}
	return checkIDs(string(KindVerdict), "rule_ids", r.RuleIDs)
}

func (r LinkPolicy) validate() error {
	if !r.Class.Valid() {
		return invalid(string(KindLink), "class", "not a declared link class")
	}
	if err := checkVerdict(string(KindLink), r.Verdict); err != nil {
		return err
	}
	return checkIDs(string(KindLink), "rule_ids", r.RuleIDs)
}

func (a DNSAnswer) validate() error {
	const rec = string(KindDNS)
	if !a.RRType.Valid() {
		return invalid(rec, "rrtype", "not a declared record type")
	}
	// Which list the record type fills; every other list must be empty.
	want := map[vm2.DNSRRType]string{
		vm2.DNSRRTypeA: "addrs", vm2.DNSRRTypeAAAA: "addrs",
		vm2.DNSRRTypeCNAME: "hosts", vm2.DNSRRTypeNS: "hosts",
		vm2.DNSRRTypeMX: "mx", vm2.DNSRRTypeTXT: "txt",
	}[a.RRType]
	lens := map[string]int{"addrs": len(a.Addrs), "hosts": len(a.Hosts), "mx": len(a.MX), "txt": len(a.TXT)}
	for _, field := range []string{"addrs", "hosts", "mx", "txt"} {
		n := lens[field]
		switch {
		case n > 0 && a.NXDomain:
			return invalid(rec, field, "an NXDOMAIN answer holds no records")
		case n > 0 && field != want:
			return invalid(rec, field, "not the data of a "+string(a.RRType)+" answer")
		}
	}
	switch {
	case len(a.Addrs) > MaxDNSAddrs:
		return invalid(rec, "addrs", fmt.Sprintf("%d addresses, at most %d", len(a.Addrs), MaxDNSAddrs))
	case len(a.Hosts) > MaxDNSHosts:
		return invalid(rec, "hosts", fmt.Sprintf("%d names, at most %d", len(a.Hosts), MaxDNSHosts))
	case a.RRType == vm2.DNSRRTypeCNAME && len(a.Hosts) > 1:
		return invalid(rec, "hosts", "a CNAME answer has one target")
	case len(a.MX) > MaxDNSMX:
		return invalid(rec, "mx", fmt.Sprintf("%d exchangers, at most %d", len(a.MX), MaxDNSMX))
	case len(a.TXT) > MaxDNSTXT:
		return invalid(rec, "txt", fmt.Sprintf("%d strings, at most %d", len(a.TXT), MaxDNSTXT))
	}
	for i, ip := range a.Addrs {
		field := fmt.Sprintf("addrs[%d]", i)
		switch {
		case !ip.IsValid() || ip.Zone() != "":
			return invalid(rec, field, "not an address without zone")
		case a.RRType == vm2.DNSRRTypeA && !ip.Is4():
			return invalid(rec, field, "not an IPv4 address")
		case a.RRType == vm2.DNSRRTypeAAAA && (!ip.Is6() || ip.Is4In6()):
			return invalid(rec, field, "not an IPv6 address")
		}
	}
	for i, h := range a.Hosts {
		if p := hostProblem(h); p != "" {
			return invalid(rec, fmt.Sprintf("hosts[%d]", i), p)
		}
	}
	for i, m := range a.MX {
		if p := hostProblem(m.Host); p != "" {
			return invalid(rec, fmt.Sprintf("mx[%d].host", i), p)
		}
	}
	for i, s := range a.TXT {
		if p := txtProblem(s); p != "" {
			return invalid(rec, fmt.Sprintf("txt[%d]", i), p)
		}
	}
	return nil
}

// ---- encoding ----

// record is what every record type has: its rules.
type record interface{ validate() error }

// encodeRecord validates r and encodes it as the cache stores it: the tag,
// then the fields write writes; refused above its kind's max_bytes.
func encodeRecord(r record, k Kind, tag string, fields int, write func(w *encoder)) ([]byte, error) {
	if err := r.validate(); err != nil {
		return nil, err
	}
	w := newEncoder(tag, fields)
	write(w)
	return w.sized(k)
}

// recordDecoder starts reading a stored record of kind k; any fault is ErrCorrupt.
func recordDecoder(k Kind, b []byte, tag string, fields int) *decoder {
	return newDecoder(string(k), b, maxBytes(k), tag, fields, ErrCorrupt)
}

// decoded finishes d and validates r, the record read from it: a rule the
// stored value breaks is ErrCorrupt (the bytes are at fault, not the caller).
func decoded[R record](d *decoder, r R) (R, error) {
	var zero R
	if err := d.finish(); err != nil {
		return zero, err
	}
	if err := r.validate(); err != nil {
		return zero, corrupt(d.record, err)
	}
	return r, nil
}

// EncodeText validates r and encodes it as the cache stores it.
func EncodeText(r TextResult) ([]byte, error) {
	return encodeRecord(r, KindText, tagText, 3, func(w *encoder) {
		w.str(string(r.Verdict))
		w.strs(r.RuleIDs)
		w.strs(r.MonitorRuleIDs)
	})
}

// DecodeText decodes and validates a stored TextResult; any fault is ErrCorrupt.
func DecodeText(b []byte) (TextResult, error) {
	d := recordDecoder(KindText, b, tagText, 3)
	r := TextResult{
		Verdict:        Verdict(d.str("verdict", 16)),
		RuleIDs:        d.strs("rule_ids", MaxRuleIDs, MaxIDLen),
		MonitorRuleIDs: d.strs("monitor_rule_ids", MaxRuleIDs, MaxIDLen),
	}
	return decoded(d, r)
}

// EncodeVerdict validates v and encodes it as the cache stores it.
func EncodeVerdict(v FileVerdict) ([]byte, error) {
	return encodeRecord(v, KindVerdict, tagVerdict, 2, func(w *encoder) {
		w.str(string(v.Verdict))
		w.strs(v.RuleIDs)
	})
}

// DecodeVerdict decodes and validates a stored FileVerdict; any fault is ErrCorrupt.
func DecodeVerdict(b []byte) (FileVerdict, error) {
	d := recordDecoder(KindVerdict, b, tagVerdict, 2)
	v := FileVerdict{
		Verdict: Verdict(d.str("verdict", 16)),
		RuleIDs: d.strs("rule_ids", MaxRuleIDs, MaxIDLen),
	}
	return decoded(d, v)
}

// EncodeLink validates p and encodes it as the cache stores it.
func EncodeLink(p LinkPolicy) ([]byte, error) {
	return encodeRecord(p, KindLink, tagLink, 3, func(w *encoder) {
		w.str(string(p.Class))
		w.str(string(p.Verdict))
		w.strs(p.RuleIDs)
	})
}

// DecodeLink decodes and validates a stored LinkPolicy; any fault is ErrCorrupt.
func DecodeLink(b []byte) (LinkPolicy, error) {
	d := recordDecoder(KindLink, b, tagLink, 3)
	p := LinkPolicy{
		Class:   LinkClass(d.str("class", 16)),
		Verdict: Verdict(d.str("verdict", 16)),
		RuleIDs: d.strs("rule_ids", MaxRuleIDs, MaxIDLen),
	}
	return decoded(d, p)
}

// EncodeDNS validates a and encodes it as the cache stores it. The TTL is not part
// of the value: the entry's own expiry holds it.
func EncodeDNS(a DNSAnswer) ([]byte, error) {
	return encodeRecord(a, KindDNS, tagDNS, 6, func(w *encoder) {
		w.str(string(a.RRType))
		w.boolean(a.NXDomain)
		w.arrayLen(len(a.Addrs))
		for _, ip := range a.Addrs {
			w.bin(ip.AsSlice())
		}
		w.strs(a.Hosts)
		w.arrayLen(len(a.MX))
		for _, m := range a.MX {
			w.arrayLen(2)
			w.uint16(m.Preference)
			w.str(m.Host)
		}
		w.strs(a.TXT)
	})
}

// DecodeDNS decodes and validates a stored DNSAnswer (TTL left 0); any fault is
// ErrCorrupt.
func DecodeDNS(b []byte) (DNSAnswer, error) {
	d := recordDecoder(KindDNS, b, tagDNS, 6)
	a := DNSAnswer{RRType: vm2.DNSRRType(d.str("rrtype", 8)), NXDomain: d.boolean("nxdomain")}
	if n := d.arrayLen("addrs", MaxDNSAddrs); n > 0 {
		a.Addrs = make([]netip.Addr, 0, n)
		for i := 0; i < n && d.err == nil; i++ {
			field := fmt.Sprintf("addrs[%d]", i)
			ip, ok := netip.AddrFromSlice(d.bin(field, 16))
			if d.err == nil && !ok {
				d.fail(field, "not 4 or 16 bytes")
			}
			a.Addrs = append(a.Addrs, ip)
		}
	}
	a.Hosts = d.strs("hosts", MaxDNSHosts, maxHostLen+1)
	if n := d.arrayLen("mx", MaxDNSMX); n > 0 {
		a.MX = make([]MX, 0, n)
		for i := 0; i < n && d.err == nil; i++ {
			field := fmt.Sprintf("mx[%d]", i)
			if d.arrayLen(field, 2) != 2 && d.err == nil {
				d.fail(field, "not a [preference, host] pair")
			}
			a.MX = append(a.MX, MX{Preference: d.uint16(field + ".preference"), Host: d.str(field+".host", maxHostLen+1)})
		}
	}
	a.TXT = d.strs("txt", MaxDNSTXT, MaxTXTLen)
	return decoded(d, a)
}
