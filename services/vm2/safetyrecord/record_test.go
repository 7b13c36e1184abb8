package safetyrecord

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/hanchat/luagen/generated/vm2"
	"github.com/hanchat/luagen/services/msgpackcheck"
	"github.com/vmihailenco/msgpack/v5"
)

var (
	sampleText    = TextResult{Verdict: VerdictMonitor, RuleIDs: []string{"pii.phone"}, MonitorRuleIDs: []string{"monitor.crypto-wallet", "m:7"}}
	sampleVerdict = FileVerdict{Verdict: VerdictBlock, RuleIDs: []string{"clamav:Eicar-Signature", "yara.macro_autoexec"}}
	sampleLink    = LinkPolicy{Class: LinkSuspicious, Verdict: VerdictReview, RuleIDs: []string{"link.shortener"}}
	sampleDNS     = []DNSAnswer{
		{RRType: vm2.DNSRRTypeA, Addrs: []netip.Addr{netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("10.0.0.7")}},
		{RRType: vm2.DNSRRTypeAAAA, Addrs: []netip.Addr{netip.MustParseAddr("2001:db8::1")}},
		{RRType: vm2.DNSRRTypeCNAME, Hosts: []string{"edge.example.net."}},
		{RRType: vm2.DNSRRTypeNS, Hosts: []string{"ns1.example.org", "ns2.example.org"}},
		{RRType: vm2.DNSRRTypeMX, MX: []MX{{Preference: 10, Host: "mx1.example.com"}, {Preference: 65535, Host: "."}}},
		{RRType: vm2.DNSRRTypeTXT, TXT: []string{"v=spf1 include:_spf.example.com ~all", ""}},
		{RRType: vm2.DNSRRTypeA, NXDomain: true},
		{RRType: vm2.DNSRRTypeAAAA}, // NODATA
	}
)

var addrCmp = cmp.Comparer(func(a, b netip.Addr) bool { return a == b })

func TestRecordsRoundTrip(t *testing.T) {
	b, err := EncodeText(sampleText)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := DecodeText(b); err != nil || !cmp.Equal(got, sampleText) {
		t.Fatalf("text: %+v %v", got, err)
	}
	if b, err = EncodeVerdict(sampleVerdict); err != nil {
		t.Fatal(err)
	}
	if got, err := DecodeVerdict(b); err != nil || !cmp.Equal(got, sampleVerdict) {
		t.Fatalf("verdict: %+v %v", got, err)
	}
	if b, err = EncodeLink(sampleLink); err != nil {
		t.Fatal(err)
	}
	if got, err := DecodeLink(b); err != nil || !cmp.Equal(got, sampleLink) {
		t.Fatalf("link: %+v %v", got, err)
	}
	for _, a := range sampleDNS {
		b, err := EncodeDNS(a)
		if err != nil {
			t.Fatalf("%s: %v", a.RRType, err)
		}
		got, err := DecodeDNS(b)
		if err != nil || !cmp.Equal(got, a, addrCmp, cmpopts.EquateEmpty()) {
			t.Fatalf("dns %s: %+v %v", a.RRType, got, err)
		}
	}
	// Empty lists decode as nil: a record has one encoding per value.
	if b, _ := EncodeText(TextResult{Verdict: VerdictAllow}); len(b) > 16 {
		t.Fatalf("an empty text result takes %d bytes", len(b))
	}
}

// Raw text, file bytes, presigned URLs and documents have no field to go in, and a
// string that looks like one is refused; the error names the field, never the value.
func TestRecordsRefuseWhatMayNotBeStored(t *testing.T) {
	presigned := "https://files.example.com/a.pdf?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA%2F20261130&X-Amz-Signature=0badc0ffee"
	message := "Hello Anna, the contract is attached, call me at +7 999 123 45 67 before Friday please"
	ids := make([]string, MaxRuleIDs+1)
	for i := range ids {
		ids[i] = fmt.Sprintf("r%d", i)
	}
	cases := []struct {
		name   string
		encode func() ([]byte, error)
		field  string
		secret string // must not appear in the error
		reason string
	}{
		{"presigned URL as a rule id", func() ([]byte, error) {
			return EncodeText(TextResult{Verdict: VerdictAllow, RuleIDs: []string{"ok", presigned}})
		}, "rule_ids[1]", presigned, "presigned URL"},
		{"bare signature query", func() ([]byte, error) {
			return EncodeVerdict(FileVerdict{Verdict: VerdictAllow, RuleIDs: []string{"a?sig=abc"}})
		}, "rule_ids[0]", "sig=abc", "presigned URL"},
		{"URL as a rule id", func() ([]byte, error) {
			return EncodeLink(LinkPolicy{Class: LinkUnknown, Verdict: VerdictAllow, RuleIDs: []string{"http://example.com/x"}})
		}, "rule_ids[0]", "example.com", "looks like a URL"},
		{"message text as a monitor rule id", func() ([]byte, error) {
			return EncodeText(TextResult{Verdict: VerdictAllow, MonitorRuleIDs: []string{message}})
		}, "monitor_rule_ids[0]", "Anna", "free text"},
		{"short text with spaces", func() ([]byte, error) {
			return EncodeText(TextResult{Verdict: VerdictAllow, RuleIDs: []string{"call me"}})
		}, "rule_ids[0]", "call me", "white space"},
		{"file bytes as a rule id", func() ([]byte, error) {
			return EncodeVerdict(FileVerdict{Verdict: VerdictBlock, RuleIDs: []string{"%PDF-1.7\x00\x01"}})
		}, "rule_ids[0]", "PDF", "not an identifier"},
		{"empty rule id", func() ([]byte, error) { return EncodeText(TextResult{Verdict: VerdictAllow, RuleIDs: []string{""}}) }, "rule_ids[0]", "", "empty"},
		{"too many rule ids", func() ([]byte, error) { return EncodeVerdict(FileVerdict{Verdict: VerdictAllow, RuleIDs: ids}) }, "rule_ids", "", "at most 256"},
		{"unknown verdict", func() ([]byte, error) { return EncodeText(TextResult{Verdict: "maybe"}) }, "verdict", "maybe", "verdict"},
		{"unknown class", func() ([]byte, error) {
			return EncodeLink(LinkPolicy{Class: "phishy", Verdict: VerdictAllow})
		}, "class", "phishy", "link class"},
		{"TXT with a presigned URL", func() ([]byte, error) {
			return EncodeDNS(DNSAnswer{RRType: vm2.DNSRRTypeTXT, TXT: []string{"see " + presigned}})
		}, "txt[0]", presigned, "presigned URL"},
		{"TXT over 255 bytes", func() ([]byte, error) {
			return EncodeDNS(DNSAnswer{RRType: vm2.DNSRRTypeTXT, TXT: []string{strings.Repeat(message+" ", 4)}})
		}, "txt[0]", "Anna", "over-long free text"},
		{"TXT with a newline", func() ([]byte, error) {
			return EncodeDNS(DNSAnswer{RRType: vm2.DNSRRTypeTXT, TXT: []string{"a\nb"}})
		}, "txt[0]", "", "printable"},
		{"IPv6 in an A answer", func() ([]byte, error) {
			return EncodeDNS(DNSAnswer{RRType: vm2.DNSRRTypeA, Addrs: []netip.Addr{netip.MustParseAddr("2001:db8::1")}})
		}, "addrs[0]", "2001", "IPv4"},
		{"IPv4-mapped in an AAAA answer", func() ([]byte, error) {
			return EncodeDNS(DNSAnswer{RRType: vm2.DNSRRTypeAAAA, Addrs: []netip.Addr{netip.MustParseAddr("::ffff:192.0.2.1")}})
		}, "addrs[0]", "192.0.2.1", "IPv6"},
		{"zero address", func() ([]byte, error) {
			return EncodeDNS(DNSAnswer{RRType: vm2.DNSRRTypeA, Addrs: []netip.Addr{{}}})
		}, "addrs[0]", "", "address"},
		{"hosts in an A answer", func() ([]byte, error) {
			return EncodeDNS(DNSAnswer{RRType: vm2.DNSRRTypeA, Hosts: []string{"a.example"}})
		}, "hosts", "a.example", "not the data"},
		{"two CNAME targets", func() ([]byte, error) {
			return EncodeDNS(DNSAnswer{RRType: vm2.DNSRRTypeCNAME, Hosts: []string{"a.example", "b.example"}})
		}, "hosts", "", "one target"},
		{"records in an NXDOMAIN answer", func() ([]byte, error) {
			return EncodeDNS(DNSAnswer{RRType: vm2.DNSRRTypeA, NXDomain: true, Addrs: []netip.Addr{netip.MustParseAddr("192.0.2.1")}})
		}, "addrs", "", "NXDOMAIN"},
		{"URL as an NS name", func() ([]byte, error) {
			return EncodeDNS(DNSAnswer{RRType: vm2.DNSRRTypeNS, Hosts: []string{"https://ns.example/"}})
		}, "hosts[0]", "ns.example", "DNS name"},
		{"unknown record type", func() ([]byte, error) { return EncodeDNS(DNSAnswer{RRType: "SRV"}) }, "rrtype", "", "record type"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := c.encode()
			var re *RecordError
			if !errors.Is(err, ErrInvalidRecord) || !errors.As(err, &re) || b != nil {
				t.Fatalf("got %d bytes, %v; want ErrInvalidRecord", len(b), err)
			}
			if re.Field != c.field || !strings.Contains(re.Reason, c.reason) {
				t.Fatalf("field %q reason %q; want field %q, reason with %q", re.Field, re.Reason, c.field, c.reason)
			}
			if c.secret != "" && strings.Contains(err.Error(), c.secret) {
				t.Fatalf("the error shows the value: %v", err)
			}
		})
	}
}

// The largest record that fits its key's max_bytes is stored; one more rule id is
// ErrTooLarge.
func TestRecordSizeLimit(t *testing.T) {
	id := func(i int) string { return fmt.Sprintf("%064d", i) }
	var last []byte
	for n := 1; ; n++ {
		r := TextResult{Verdict: VerdictReview}
		for i := 0; i < n; i++ {
			if i < MaxRuleIDs {
				r.RuleIDs = append(r.RuleIDs, id(i))
			} else {
				r.MonitorRuleIDs = append(r.MonitorRuleIDs, id(i))
			}
		}
		b, err := EncodeText(r)
		if err != nil {
			if !errors.Is(err, ErrTooLarge) || last == nil {
				t.Fatalf("%d ids: %v", n, err)
			}
			if len(last) > vm2.SafetyTextMaxBytes || len(last) <= vm2.SafetyTextMaxBytes-66 {
				t.Fatalf("the largest record takes %d bytes; the limit is %d", len(last), vm2.SafetyTextMaxBytes)
			}
			if _, err := DecodeText(last); err != nil {
				t.Fatal(err)
			}
			break
		}
		last = b
	}
	// DNS has the smallest limit: 16 TXT strings of 255 bytes exceed it.
	txt := make([]string, MaxDNSTXT)
	for i := range txt {
		txt[i] = strings.Repeat("x", MaxTXTLen)
	}
	if _, err := EncodeDNS(DNSAnswer{RRType: vm2.DNSRRTypeTXT, TXT: txt}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("16 x 255 bytes of TXT: %v", err)
	}
	// A stored value above the key's limit is not even decoded.
	if _, err := DecodeDNS(make([]byte, vm2.SafetyDNSMaxBytes+1)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("oversized stored value: %v", err)
	}
}

// rawRecord encodes a record the way the cache does, without validation, so a test
// can store what a buggy or hostile writer would.
func rawRecord(tag string, fields ...any) []byte {
	w := newEncoder(tag, len(fields))
	for _, f := range fields {
		switch v := f.(type) {
		case string:
			w.str(v)
		case []string:
			w.strs(v)
		case bool:
			w.boolean(v)
		case []byte:
			w.bin(v)
		}
	}
	b, _ := w.bytes()
	return b
}

// Every damaged or hostile value is ErrCorrupt, never a panic and never a huge
// allocation.
func TestDecodeRefusesInvalidSerialization(t *testing.T) {
	valid, _ := EncodeText(sampleText)
	verdict, _ := EncodeVerdict(sampleVerdict)
	cases := map[string][]byte{
		"empty":                     {},
		"nil":                       nil,
		"not msgpack":               []byte("\xc1\xc1\xc1"),
		"JSON":                      []byte(`{"verdict":"allow"}`),
		"a map":                     {0x81, 0xa1, 'v', 0xa5, 'a', 'l', 'l', 'o', 'w'},
		"trailing byte":             append(append([]byte{}, valid...), 0xc0),
		"wrong field count":         rawRecord(tagText, "allow", []string{}),
		"array claims 4G elements":  {0xdd, 0xff, 0xff, 0xff, 0xff},
		"string claims 4 GB":        {0x94, 0xdb, 0xff, 0xff, 0xff, 0xff},
		"list claims 4G ids":        bytes.Join([][]byte{{0x94}, rawRecord(tagText)[1:], {0xa5, 'a', 'l', 'l', 'o', 'w', 0xdd, 0xff, 0xff, 0xff, 0xff}}, nil),
		"binary where text goes":    rawRecord(tagText, []byte("allow"), []string{}, []string{}),
		"bool where a list goes":    rawRecord(tagText, "allow", true, []string{}),
		"unknown verdict":           rawRecord(tagText, "ok", []string{}, []string{}),
		"presigned URL inside":      rawRecord(tagText, "allow", []string{"https://x.example/f?X-Amz-Signature=1"}, []string{}),
		"free text inside":          rawRecord(tagVerdict, "allow", []string{"the raw message text of someone"}),
		"over-long id inside":       rawRecord(tagLink, "unknown", "allow", []string{strings.Repeat("a", 65)}),
		"address of 5 bytes":        {0x97, 0xa5, 'd', 'n', 's', '/', '1', 0xa1, 'A', 0xc2, 0x91, 0xc4, 5, 1, 2, 3, 4, 5, 0x90, 0x90, 0x90},
		"A answer with IPv6 inside": {0x97, 0xa5, 'd', 'n', 's', '/', '1', 0xa1, 'A', 0xc2, 0x91, 0xc4, 16, 0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0x90, 0x90, 0x90},
		"negative MX preference":    {0x97, 0xa5, 'd', 'n', 's', '/', '1', 0xa2, 'M', 'X', 0xc2, 0x90, 0x90, 0x91, 0x92, 0xff, 0xa1, '.', 0x90},
		"MX pair of 3":              {0x97, 0xa5, 'd', 'n', 's', '/', '1', 0xa2, 'M', 'X', 0xc2, 0x90, 0x90, 0x91, 0x93, 0x01, 0xa1, '.', 0xc0, 0x90},
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			for kind, decode := range decoders {
				if _, err := decode(b); !errors.Is(err, ErrCorrupt) {
					t.Errorf("%s: %v; want ErrCorrupt", kind, err)
				}
			}
		})
	}
	// A valid record of another kind is refused by every other kind.
	for kind, decode := range decoders {
		if _, err := decode(verdict); kind != KindVerdict && !errors.Is(err, ErrCorrupt) {
			t.Errorf("a verdict read as %s: %v", kind, err)
		}
	}
	// Every truncation of a valid value is refused.
	for _, full := range [][]byte{valid, verdict} {
		for n := 0; n < len(full); n++ {
			if _, err := DecodeText(full[:n]); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%d of %d bytes: %v", n, len(full), err)
			}
			if _, err := DecodeVerdict(full[:n]); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%d of %d bytes: %v", n, len(full), err)
			}
		}
	}
}

// msgpackcheck.Check refuses, before any field is read, a value that is not
// exactly one well-formed MessagePack value within its key's max_bytes: the error
// matches msgpackcheck.ErrMalformed as well as ErrCorrupt. A well-formed value
// that breaks the record's rules matches ErrCorrupt only.
func TestDecodeChecksTheShapeWithMsgpackcheck(t *testing.T) {
	valid, _ := EncodeText(sampleText)
	malformed := map[string][]byte{
		"empty":                    {},
		"not msgpack":              []byte("\xc1\xc1\xc1"),
		"JSON":                     []byte(`{"verdict":"allow"}`),
		"trailing byte":            append(append([]byte{}, valid...), 0xc0),
		"two records":              append(append([]byte{}, valid...), valid...),
		"truncated":                valid[:len(valid)-1],
		"array claims 4G elements": {0xdd, 0xff, 0xff, 0xff, 0xff},
		"string claims 4 GB":       {0x94, 0xdb, 0xff, 0xff, 0xff, 0xff},
	}
	for name, b := range malformed {
		for kind, decode := range decoders {
			if _, err := decode(b); !errors.Is(err, ErrCorrupt) || !errors.Is(err, msgpackcheck.ErrMalformed) {
				t.Errorf("%s as %s: %v; want ErrCorrupt and msgpackcheck.ErrMalformed", name, kind, err)
			}
		}
	}
	// One well-formed value, one byte above each kind's max_bytes.
	for kind, decode := range decoders {
		var big []byte
		for n := maxBytes(kind); len(big) != maxBytes(kind)+1 && n > 0; n-- {
			big, _ = msgpack.Marshal(make([]byte, n)) // a bin header of 2, 3 or 5 bytes
		}
		if len(big) != maxBytes(kind)+1 {
			t.Fatalf("%s: no bin value of %d bytes", kind, maxBytes(kind)+1)
		}
		if _, err := decode(big); !errors.Is(err, ErrCorrupt) || !errors.Is(err, msgpackcheck.ErrMalformed) {
			t.Errorf("%s above its max_bytes: %v", kind, err)
		}
	}
	for name, b := range map[string][]byte{
		"a map":             {0x81, 0xa1, 'v', 0xa5, 'a', 'l', 'l', 'o', 'w'},
		"wrong field count": rawRecord(tagText, "allow", []string{}),
		"unknown verdict":   rawRecord(tagText, "ok", []string{}, []string{}),
	} {
		if _, err := DecodeText(b); !errors.Is(err, ErrCorrupt) || errors.Is(err, msgpackcheck.ErrMalformed) {
			t.Errorf("%s: %v; want ErrCorrupt only", name, err)
		}
	}
	payload, err := EncodeWakeup(Wakeup{Reason: WakeTasksReady})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeWakeup(append(payload, 0xc0)); !errors.Is(err, ErrInvalidWakeup) || !errors.Is(err, msgpackcheck.ErrMalformed) {
		t.Errorf("a wake-up with a trailing byte: %v", err)
	}
}

var decoders = map[Kind]func([]byte) (any, error){
	KindText:    func(b []byte) (any, error) { return DecodeText(b) },
	KindVerdict: func(b []byte) (any, error) { return DecodeVerdict(b) },
	KindLink:    func(b []byte) (any, error) { return DecodeLink(b) },
	KindDNS:     func(b []byte) (any, error) { return DecodeDNS(b) },
}

// Whatever the bytes, decoding never panics, and what it accepts encodes again to a
// value that decodes to the same record.
func FuzzDecode(f *testing.F) {
	for _, b := range [][]byte{
		mustBytes(EncodeText(sampleText)), mustBytes(EncodeVerdict(sampleVerdict)), mustBytes(EncodeLink(sampleLink)),
		mustBytes(EncodeDNS(sampleDNS[0])), mustBytes(EncodeDNS(sampleDNS[4])), mustBytes(EncodeDNS(sampleDNS[5])),
		{0xdd, 0xff, 0xff, 0xff, 0xff},
	} {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if r, err := DecodeText(b); err == nil {
			again, err := DecodeText(mustBytes(EncodeText(r)))
			if err != nil || !cmp.Equal(again, r) {
				t.Fatalf("text round trip: %+v %v", again, err)
			}
		}
		if r, err := DecodeVerdict(b); err == nil {
			if again, err := DecodeVerdict(mustBytes(EncodeVerdict(r))); err != nil || !cmp.Equal(again, r) {
				t.Fatalf("verdict round trip: %+v %v", again, err)
			}
		}
		if r, err := DecodeLink(b); err == nil {
			if again, err := DecodeLink(mustBytes(EncodeLink(r))); err != nil || !cmp.Equal(again, r) {
				t.Fatalf("link round trip: %+v %v", again, err)
			}
		}
		if r, err := DecodeDNS(b); err == nil {
			if again, err := DecodeDNS(mustBytes(EncodeDNS(r))); err != nil || !cmp.Equal(again, r, addrCmp) {
				t.Fatalf("dns round trip: %+v %v", again, err)
			}
		}
		if w, err := DecodeWakeup(b); err == nil {
			if enc, err := EncodeWakeup(w); err != nil || !bytes.Equal(enc, mustBytes(EncodeWakeup(w))) {
				t.Fatalf("wake-up round trip: %v", err)
			}
		}
	})
}

func mustBytes(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

func TestWakeupPayload(t *testing.T) {
	b, err := EncodeWakeup(Wakeup{Reason: WakeTasksReady})
	if err != nil {
		t.Fatal(err)
	}
	if w, err := DecodeWakeup(b); err != nil || w.Reason != WakeTasksReady {
		t.Fatalf("%+v %v", w, err)
	}
	if _, err := EncodeWakeup(Wakeup{Reason: WakeSubscribed}); !errors.Is(err, ErrInvalidWakeup) {
		t.Fatalf("a local reason was encoded: %v", err)
	}
	for _, p := range [][]byte{nil, []byte("wake up"), rawRecord(tagWakeup, "subscribed"), rawRecord(tagWakeup, "tasks_ready", "task-id-42"), make([]byte, vm2.SafetyWakeupChannelMaxBytes+1)} {
		if _, err := DecodeWakeup(p); !errors.Is(err, ErrInvalidWakeup) {
			t.Fatalf("%q: %v", p, err)
		}
	}
}
