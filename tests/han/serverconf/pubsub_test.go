package serverconf_test

import (
	"strings"
	"testing"

	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/gen/serverconf"
)

// Each instance's config sets client-output-buffer-limit pubsub deliberately, in
// messages of its largest channel payload (1024 hard, 256 for 10 s soft), with
// the reason in a comment: 4 MiB / 1 MiB on vm1 (4 KiB realtime events), 512 KiB
// / 128 KiB on vm2 (512-byte wake-ups), never Redis's 32 MB default.
func TestPubSubOutputBufferLimit(t *testing.T) {
	spec, err := keyspec.Load("../../../keyspec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		instance string
		largest  int
		line     string
	}{
		{"vm1", 4096, "client-output-buffer-limit pubsub 4194304 1048576 10\n"},
		{"vm2", 512, "client-output-buffer-limit pubsub 524288 131072 10\n"},
	} {
		in := spec.Instance(tc.instance)
		hard, soft, largest := serverconf.PubSubLimits(spec, in)
		if largest != tc.largest || hard != int64(tc.largest)*1024 || soft != int64(tc.largest)*256 {
			t.Errorf("%s: limits %d/%d of %d-byte messages", tc.instance, hard, soft, largest)
		}
		conf, err := serverconf.Render(spec, in, serverconf.DefaultOptions)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Count(conf, "client-output-buffer-limit") != 1 || !strings.Contains(conf, "\n"+tc.line) {
			t.Errorf("%s config lacks exactly %q:\n%s", tc.instance, tc.line, conf)
		}
		before, _, _ := strings.Cut(conf, tc.line)
		if !strings.Contains(before[strings.LastIndex(before, "\n\n"):], "reconcile from its source of truth") {
			t.Errorf("%s: the limit has no reason above it", tc.instance)
		}
	}
}
