package tests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hanchat/luagen/gen/alerts"
	"github.com/hanchat/luagen/gen/dashboards"
	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/generated/vm2"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/runtime/scriptmetrics"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"
)

// needTool finds a binary the monitoring test needs; -short skips without it.
func needTool(t *testing.T, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if testing.Short() {
			t.Skipf("%s is not installed (-short)", name)
		}
		t.Fatalf("%s is not installed: make deps installs the Debian package %s", name, pkg)
	}
	return p
}

func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		if !strings.HasSuffix(addr, ":6379") {
			return addr
		}
	}
}

// process is a binary the test started; Cleanup kills it by its pid.
type process struct {
	cmd  *exec.Cmd
	done chan struct{}
	log  *os.File
}

func startProcess(t *testing.T, dir, name string, bin string, args ...string) *process {
	t.Helper()
	log, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: cmd, done: make(chan struct{}), log: log}
	go func() { _ = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
		log.Close()
	})
	return p
}

func (p *process) tail() string {
	b, _ := os.ReadFile(p.log.Name())
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-15):], "\n")
}

// promAPI queries a Prometheus on loopback.
type promAPI struct{ base string }

func (p promAPI) get(ctx context.Context, path string, q url.Values, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+path+"?"+q.Encode(), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var env struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		return fmt.Errorf("%s: HTTP %d: %w", path, resp.StatusCode, err)
	}
	if env.Status != "success" {
		return fmt.Errorf("%s: %s", path, env.Error)
	}
	return json.Unmarshal(env.Data, out)
}

type promAlert struct {
	Labels map[string]string `json:"labels"`
	State  string            `json:"state"`
}

func (p promAPI) alerts(ctx context.Context) ([]promAlert, error) {
	var d struct {
		Alerts []promAlert `json:"alerts"`
	}
	err := p.get(ctx, "/api/v1/alerts", nil, &d)
	return d.Alerts, err
}

// firing reports whether an alert of that name, with the labels given, fires.
func firing(as []promAlert, name string, labels map[string]string) bool {
	for _, a := range as {
		if a.State != "firing" || a.Labels["alertname"] != name {
			continue
		}
		ok := true
		for k, v := range labels {
			ok = ok && a.Labels[k] == v
		}
		if ok {
			return true
		}
	}
	return false
}

func (p promAPI) query(ctx context.Context, expr string) (int, error) {
	var d struct {
		ResultType string            `json:"resultType"`
		Result     []json.RawMessage `json:"result"`
	}
	if err := p.get(ctx, "/api/v1/query", url.Values{"query": {expr}}, &d); err != nil {
		return 0, err
	}
	return len(d.Result), nil
}

// incident is one real fault and the alert it must raise.
type incident struct {
	alert  string
	at     time.Time // when it was caused, then undone
	labels map[string]string
	cause  func(ctx context.Context) error
	undo   func(ctx context.Context) error
}

// TestAlertsFireOnARealPrometheus is the monitoring end-to-end test (issue
// 22): VM1's and VM2's redis-servers from the generated aclfiles and configs
// (maxmemory 48mb and 16mb, which the spec leaves to the load profile), VM1
// with a replica, a Redis exporter for each scraping it as a user holding
// only alerts.ExporterCommands, the generated wrappers' metrics endpoint, and
// Prometheus with luagen alerts' rules for both (windows shortened: scrape and
// evaluation every second), all on loopback ports in a temporary folder.
// Before any incident no alert fires; then real incidents (VM1's memory
// filled to maxmemory, a key without TTL on each, NOPERM attempts on each,
// WRONGPASS logins, a script error storm, VM1's replica killed) each make
// their alert fire in Prometheus's /api/v1/alerts, nothing else fires, and
// each resolves once undone. Every query of both dashboards parses and
// returns series on the same Prometheus.
func TestAlertsFireOnARealPrometheus(t *testing.T) {
	redistest.Need(t)
	promBin := needTool(t, "prometheus", "prometheus")
	exporterBin := needTool(t, "prometheus-redis-exporter", "prometheus-redis-exporter")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	dir := t.TempDir()

	// VM1 and VM2 from the generated files, each with its exporter's user and
	// an exporter scraping through it.
	type monitored struct {
		a            *aclInstance
		exporterAddr string
		exporter     *process
	}
	var insts []*monitored
	var ruleFiles []string
	for _, name := range []string{"vm1", "vm2"} {
		m := &monitored{a: startACLInstance(t, name, map[string]string{"vm1": "maxmemory 48mb", "vm2": "maxmemory 16mb"}[name])}
		user, pw := alerts.ExporterUser(m.a.in), "exporter-test-password-4e1d-"+name
		if err := m.a.admin.Do(ctx, append([]any{"ACL", "SETUSER", user, "reset", "on", ">" + pw}, toAny(strings.Fields(alerts.ExporterCommands))...)...).Err(); err != nil {
			t.Fatal(err)
		}
		// The exporter's password file maps each target's URL to its password.
		pwJSON, err := json.Marshal(map[string]string{"redis://" + m.a.srv.Addr: pw})
		if err != nil {
			t.Fatal(err)
		}
		pwFile := filepath.Join(dir, name+".exporter.json")
		if err := os.WriteFile(pwFile, pwJSON, 0o600); err != nil {
			t.Fatal(err)
		}
		m.exporterAddr = freeLoopbackAddr(t)
		m.exporter = startProcess(t, dir, name+"-exporter", exporterBin, "-redis.addr", "redis://"+m.a.srv.Addr, "-redis.user", user,
			"-redis.password-file", pwFile, "-web.listen-address", m.exporterAddr, "-ping-on-connect")
		// The rules, windows shortened for a 1 s scrape and evaluation interval.
		rules, notes, err := alerts.Rules(m.a.spec, m.a.in, alerts.Options{Window: 15 * time.Second, LongWindow: 2 * time.Minute, ForFactor: 0.02})
		if err != nil {
			t.Fatal(err)
		}
		rulesYAML, err := rules.YAML(alerts.Header(m.a.spec, m.a.in, "", notes))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".rules.yml"), rulesYAML, 0o644); err != nil {
			t.Fatal(err)
		}
		ruleFiles = append(ruleFiles, name+".rules.yml")
		insts = append(insts, m)
	}
	a := insts[0].a
	replicaConf := []string{"replicaof 127.0.0.1 " + strconv.Itoa(a.srv.Port), "masteruser luagen_test_admin", "masterauth admin-test-password"}
	replica := redistest.Start(t, redistest.WithConfig(replicaConf...))

	// The services' metrics endpoint: the generated wrappers' metrics of
	// api-backend's (vm1) and Message Safety's (vm2) scripts.
	reg := prometheus.NewRegistry()
	metrics, err := scriptmetrics.New(reg, append(vm1.AllScripts(), vm2.AllScripts()...)...)
	if err != nil {
		t.Fatal(err)
	}
	app := a.client(t, "api_backend", vm1.DB0)
	scripts, err := vm1.NewScripts(vm1.Clients{DB0: app, Observer: metrics})
	if err != nil {
		t.Fatal(err)
	}
	svcAddr := freeLoopbackAddr(t)
	ln, err := net.Listen("tcp", svcAddr)
	if err != nil {
		t.Fatal(err)
	}
	svc := &http.Server{Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = svc.Serve(ln) }()
	t.Cleanup(func() { _ = svc.Close() })

	promAddr := freeLoopbackAddr(t)
	promConf := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 900ms
  evaluation_interval: 1s
rule_files: [%s]
scrape_configs:
  - job_name: redis-vm1
    static_configs:
      - targets: [%q]
        labels: {luagen_instance: vm1}
  - job_name: redis-vm2
    static_configs:
      - targets: [%q]
        labels: {luagen_instance: vm2}
  - job_name: api-backend
    static_configs:
      - targets: [%q]
`, strings.Join(ruleFiles, ", "), insts[0].exporterAddr, insts[1].exporterAddr, svcAddr)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(promConf), 0o644); err != nil {
		t.Fatal(err)
	}
	promProc := startProcess(t, dir, "prometheus", promBin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "tsdb"), "--web.listen-address="+promAddr, "--storage.tsdb.retention.time=1h")
	prom := promAPI{base: "http://" + promAddr}

	// Ready: every target scraped, the exporters without error, rules evaluated.
	var why string
	ready := redistest.WaitFor(ctx, 2*time.Minute, func() bool {
		for _, m := range insts {
			select {
			case <-m.exporter.done:
				why = "an exporter exited:\n" + m.exporter.tail()
				return true
			default:
			}
		}
		select {
		case <-promProc.done:
			why = "prometheus exited:\n" + promProc.tail()
			return true
		default:
		}
		n, err := prom.query(ctx, `count(up == 1) == 3`)
		if err != nil || n == 0 {
			why = fmt.Sprintf("targets not up (%v)", err)
			return false
		}
		if n, err = prom.query(ctx, `count(redis_up == 1 and on(job) redis_exporter_last_scrape_error == 0) == 2 and on() redis_connected_slaves{luagen_instance="vm1"} == 1`); err != nil || n == 0 {
			why = fmt.Sprintf("the exporters do not read vm1 (with its replica) and vm2 (%v)", err)
			return false
		}
		n, err = prom.query(ctx, `max_over_time(redis_connected_slaves{luagen_instance="vm1"}[2m]) == 1`)
		why = ""
		return err == nil && n > 0
	})
	if !ready || why != "" {
		t.Fatalf("Prometheus not ready within 2m: %s\nprometheus:\n%s", why, promProc.tail())
	}
	t.Logf("ready after %s", time.Since(start).Round(time.Second))
	// Quiet before any incident: no alert pending or firing (the exporters'
	// own commands are all granted: no NOPERM from them).
	if !redistest.WaitFor(ctx, 30*time.Second, func() bool {
		as, err := prom.alerts(ctx)
		if err != nil {
			return false
		}
		n, err := prom.query(ctx, `ALERTS`)
		return err == nil && n == 0 && len(as) == 0
	}) {
		as, _ := prom.alerts(ctx)
		t.Fatalf("alerts before any incident: %+v", as)
	}

	vm2a := insts[1].a
	vm2Monitor := vm2a.srv.Client(0, func(o *redis.Options) { o.Username, o.Password = "vm2_monitor", aclPasswords["vm2_monitor"] })
	admin0 := a.srv.Client(0, admin)
	monitor := a.srv.Client(0, func(o *redis.Options) { o.Username, o.Password = "vm1_monitor", aclPasswords["vm1_monitor"] })
	liar := a.srv.Client(0, func(o *redis.Options) { o.Username, o.Password = "api_backend", "not-the-password" })
	key, err := vm1.NewAPIRLDialogKey("0b9a1f40-6a59-4f7e-9c51-6a0b7f3a9e21", 60)
	if err != nil {
		t.Fatal(err)
	}
	// Background loops (an error storm, probing) run until their incident is undone.
	var wg sync.WaitGroup
	loop := func(stop <-chan struct{}, every time.Duration, f func()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(every)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-ctx.Done():
					return
				case <-tick.C:
					f()
				}
			}
		}()
	}
	stopProbe, stopProbe2, stopStorm := make(chan struct{}), make(chan struct{}), make(chan struct{})
	defer wg.Wait()
	fill := make([]byte, 64<<10)
	incidents := []incident{
		{alert: "RedisMemoryCritical", labels: map[string]string{"luagen_instance": "vm1"}, cause: func(ctx context.Context) error {
			// 64 KiB values with a TTL (volatile-lru may evict them) in db 0, past maxmemory.
			for i := 0; i < 1000; i++ {
				if err := admin0.Set(ctx, fmt.Sprintf("han:api:fill:%d", i), fill, 10*time.Minute).Err(); err != nil {
					return err
				}
			}
			return nil
		}, undo: func(ctx context.Context) error { return admin0.Del(ctx, fillKeys(1000)...).Err() }},
		{alert: "RedisMemoryHigh", labels: map[string]string{"luagen_instance": "vm1"}},
		{alert: "RedisEvicting", labels: map[string]string{"luagen_instance": "vm1"}},
		{alert: "RedisKeysWithoutExpiry", labels: map[string]string{"luagen_instance": "vm1", "db": "db1"}, cause: func(ctx context.Context) error {
			return a.srv.Client(1, admin).Set(ctx, "han:rt:stray", "written outside the wrappers", 0).Err()
		}, undo: func(ctx context.Context) error { return a.srv.Client(1, admin).Del(ctx, "han:rt:stray").Err() }},
		{alert: "RedisKeysWithoutExpiry", labels: map[string]string{"luagen_instance": "vm2", "db": "db0"}, cause: func(ctx context.Context) error {
			return vm2a.srv.Client(0, admin).Set(ctx, "han:safety:stray", "written outside the wrappers", 0).Err()
		}, undo: func(ctx context.Context) error { return vm2a.srv.Client(0, admin).Del(ctx, "han:safety:stray").Err() }},
		{alert: "RedisACLDenied", labels: map[string]string{"luagen_instance": "vm2"}, cause: func(ctx context.Context) error {
			loop(stopProbe2, 200*time.Millisecond, func() { _ = vm2Monitor.Get(ctx, "han:safety:text:x").Err() })
			return nil
		}, undo: func(context.Context) error { close(stopProbe2); return nil }},
		{alert: "RedisACLDenied", labels: map[string]string{"luagen_instance": "vm1"}, cause: func(ctx context.Context) error {
			loop(stopProbe, 200*time.Millisecond, func() { _ = monitor.Get(ctx, "han:api:jwks:negative:x").Err() })
			return nil
		}, undo: func(context.Context) error { close(stopProbe); return nil }},
		{alert: "RedisWrongPassword", labels: map[string]string{"luagen_instance": "vm1"}, cause: func(ctx context.Context) error {
			for i := 0; i < 10; i++ {
				if err := liar.Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
					return fmt.Errorf("a wrong password: %v", err)
				}
			}
			return nil
		}},
		{alert: "LuagenScriptErrorRate", labels: map[string]string{"script": "rate_limit_sliding", "code": "BAD_ARG"}, cause: func(ctx context.Context) error {
			bad := vm1.RateLimitSlidingArgs{Limit: 1, Window: time.Minute, Cost: 2, Nonce: "storm-000000000000000001"}
			loop(stopStorm, 20*time.Millisecond, func() {
				if _, err := scripts.RateLimitSliding(ctx, key, bad); !errors.Is(err, vm1.ErrBadArg) && ctx.Err() == nil {
					t.Errorf("the storm's call: %v, want BAD_ARG", err)
				}
			})
			return nil
		}, undo: func(context.Context) error { close(stopStorm); return nil }},
		{alert: "RedisReplicaLost", labels: map[string]string{"luagen_instance": "vm1"}, cause: func(context.Context) error { replica.Kill(); return nil },
			undo: func(context.Context) error { replica.Restart(); return nil }},
	}
	for i := range incidents {
		incidents[i].at = time.Now()
		if inc := incidents[i]; inc.cause != nil {
			if err := inc.cause(ctx); err != nil {
				t.Fatalf("%s: causing it: %v", inc.alert, err)
			}
		}
	}
	waitAll := func(want bool, deadline time.Duration) {
		t.Helper()
		pending := map[int]bool{}
		for i := range incidents {
			pending[i] = true
		}
		took := map[int]time.Duration{}
		redistest.WaitFor(ctx, deadline, func() bool {
			as, err := prom.alerts(ctx)
			if err != nil {
				return false
			}
			for i, inc := range incidents {
				if pending[i] && firing(as, inc.alert, inc.labels) == want {
					delete(pending, i)
					took[i] = time.Since(inc.at)
				}
			}
			return len(pending) == 0
		})
		for i, inc := range incidents {
			if d, ok := took[i]; ok {
				t.Logf("%s %v %s after %s", inc.alert, inc.labels, map[bool]string{true: "fires", false: "resolved"}[want], d.Round(time.Second))
			}
		}
		for i := range pending {
			as, _ := prom.alerts(ctx)
			t.Errorf("%s %v: firing=%v not reached within %s; alerts: %+v", incidents[i].alert, incidents[i].labels, want, deadline, as)
		}
	}
	waitAll(true, 3*time.Minute)
	// Nothing else fires: every alert firing is one an incident caused.
	expected := map[string]bool{}
	for _, inc := range incidents {
		expected[inc.alert] = true
	}
	if as, err := prom.alerts(ctx); err == nil {
		for _, al := range as {
			if al.State == "firing" && !expected[al.Labels["alertname"]] {
				t.Errorf("unexpected alert firing: %v", al.Labels)
			}
		}
	}

	// Every dashboard query parses and returns series while the incidents run.
	var queries []string
	for _, m := range insts {
		d, err := dashboards.Build(m.a.spec, m.a.in, dashboards.Options{})
		if err != nil {
			t.Fatal(err)
		}
		queries = append(queries, d.Queries()...)
	}
	for _, q := range queries {
		expr := strings.ReplaceAll(q, dashboards.RateInterval, "1m")
		if n, err := prom.query(ctx, expr); err != nil || n == 0 {
			t.Errorf("dashboard query %s: %d series, %v", expr, n, err)
		}
	}
	t.Logf("%d dashboard queries evaluated", len(queries))

	for i := range incidents {
		incidents[i].at = time.Now()
		if inc := incidents[i]; inc.undo != nil {
			if err := inc.undo(ctx); err != nil {
				t.Fatalf("%s: undoing it: %v", inc.alert, err)
			}
		}
	}
	waitAll(false, 3*time.Minute)
	t.Logf("the whole test took %s", time.Since(start).Round(time.Second))
}

func fillKeys(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("han:api:fill:%d", i)
	}
	return out
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
