package serverconf_test

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/gen/serverconf"
)

var update = flag.Bool("update", false, "rewrite testdata/*.conf")

// The configs of testdata/keyspec.yaml's instances, each exactly as its golden
// file testdata/<instance>.conf (refreshed with -update, reviewed in the diff):
// c is a cluster (its nodes' config), x standalone; neither has a channel or a
// tbd, and neither config speaks of one (issue 25).
func TestGoldenConfigs(t *testing.T) {
	spec, err := keyspec.Load("testdata/keyspec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"c", "x"} {
		t.Run(name, func(t *testing.T) {
			got, err := serverconf.Render(spec, spec.Instance(name), serverconf.DefaultOptions)
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", name+".conf")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("config of %s differs from %s (go test -update rewrites it):\n%s", name, golden, got)
			}
			for _, not := range []string{"TBD", "until then", "largest payload"} {
				if strings.Contains(got, not) {
					t.Errorf("the config of %s speaks of %q, which the spec does not have", name, not)
				}
			}
			if isCluster := strings.Contains(got, "\ncluster-enabled yes\n"); isCluster != (name == "c") {
				t.Errorf("config of %s: cluster-enabled yes: %v", name, isCluster)
			}
		})
	}
}

// A cluster node's bus listens on port+10000: a port above 55535 is refused,
// and so are a cluster-config-file that is neither a plain name nor an
// absolute clean path, and one with a newline (it would start a directive).
func TestClusterOptionsAreValidated(t *testing.T) {
	spec, err := keyspec.Load("testdata/keyspec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	o := serverconf.DefaultOptions
	o.Port = 55536
	if _, err := serverconf.Render(spec, spec.Instance("c"), o); !errors.Is(err, serverconf.ErrBadOption) ||
		err.Error() != "port 55536: a cluster node's bus listens on port+10000 (65536), beyond 65535: choose a port up to 55535: invalid config option" {
		t.Errorf("port 55536 on a cluster: %v", err)
	}
	if _, err := serverconf.Render(spec, spec.Instance("x"), o); err != nil {
		t.Errorf("port 55536 on a standalone server: %v", err)
	}
	for _, f := range []string{"nodes 1.conf", "../nodes.conf", "dir/nodes.conf", "nodes.conf\nbind 0.0.0.0", "/var/lib/redis/../nodes.conf", ".hidden"} {
		o := serverconf.DefaultOptions
		o.ClusterConfigFile = f
		if err := o.Validate(); !errors.Is(err, serverconf.ErrBadOption) {
			t.Errorf("cluster-config-file %q: Validate = %v, want ErrBadOption", f, err)
		}
	}
	for _, f := range []string{"nodes-7001.conf", "/var/lib/redis/nodes-7001.conf"} {
		o := serverconf.DefaultOptions
		o.ClusterConfigFile = f
		if err := o.Validate(); err != nil {
			t.Errorf("cluster-config-file %q refused: %v", f, err)
		}
		out, err := serverconf.Render(spec, spec.Instance("c"), o)
		if err != nil || !strings.Contains(out, "\ncluster-config-file "+f+"\n") {
			t.Errorf("cluster-config-file %q: %v\n%s", f, err, out)
		}
	}
}
