package catalog

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hanchat/luagen/gen/compiler"
	"github.com/hanchat/luagen/gen/keyspec"
)

// fixture is the tool's own small spec (two instances, three scripts).
func fixture(t *testing.T) (*keyspec.Spec, map[string]*compiler.Source) {
	t.Helper()
	spec, err := keyspec.Load("../testdata/small/keyspec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	srcs, err := compiler.Load(spec, os.DirFS("../testdata/small/lua"), "lua")
	if err != nil {
		t.Fatal(err)
	}
	return spec, srcs
}

var (
	idRe   = regexp.MustCompile(`\sid="([^"]+)"`)
	hrefRe = regexp.MustCompile(`href="#([^"]*)"`)
)

// checkPage asserts on a page (as written, or as a browser serialised it):
// every live key and script of the shown instances has its entry, every
// internal link resolves, nothing is loaded from elsewhere.
func checkPage(t *testing.T, page string, spec *keyspec.Spec, instances ...string) {
	t.Helper()
	ids := map[string]bool{}
	for _, m := range idRe.FindAllStringSubmatch(page, -1) {
		if ids[m[1]] {
			t.Errorf("id %q appears twice", m[1])
		}
		ids[m[1]] = true
	}
	show := func(in *keyspec.Instance) bool {
		return len(instances) == 0 || strings.Contains(" "+strings.Join(instances, " ")+" ", " "+in.Name+" ")
	}
	for _, k := range spec.Keys {
		if k.Live() && show(k.Instance()) != ids["key-"+k.Name] {
			t.Errorf("key %s: shown %v, want %v", k.Name, ids["key-"+k.Name], show(k.Instance()))
		}
	}
	for _, s := range spec.Scripts {
		if s.Live() && show(s.Instance) != ids["script-"+s.ID] {
			t.Errorf("script %s: shown %v, want %v", s.Name, ids["script-"+s.ID], show(s.Instance))
		}
	}
	links := hrefRe.FindAllStringSubmatch(page, -1)
	if len(links) < 10 {
		t.Errorf("only %d internal links", len(links))
	}
	for _, m := range links {
		if !ids[m[1]] {
			t.Errorf("link #%s resolves to nothing", m[1])
		}
	}
	for _, ext := range []string{`src="http`, `href="http`, `src="//`, `href="//`, "<link", "<img", "@import", "url("} {
		if strings.Contains(page, ext) {
			t.Errorf("the page loads something from elsewhere: %q", ext)
		}
	}
}

func TestPage(t *testing.T) {
	spec, srcs := fixture(t)
	page, err := Render(spec, srcs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkPage(t, string(page), spec)
	// A script's access is Redis's: work's INCRBY reads and writes its bucket.
	if !regexp.MustCompile(`(?s)id="script-work".*?href="#key-t_rate">t_rate</a></td><td><code>[^<]*</code></td><td class="rw">read, write</td>`).Match(page) {
		t.Error("work does not show that it reads and writes t_rate")
	}
	if !regexp.MustCompile(`(?s)id="script-peek".*?href="#key-t_item">t_item</a></td><td><code>[^<]*</code></td><td class="ro">read</td>`).Match(page) {
		t.Error("peek does not show that it only reads t_item")
	}
	one, err := Render(spec, srcs, Options{Instances: []string{"b"}})
	if err != nil {
		t.Fatal(err)
	}
	checkPage(t, string(one), spec, "b")
	if _, err := Render(spec, srcs, Options{Instances: []string{"zz"}}); err == nil || !strings.Contains(err.Error(), `keyspec.yaml: no instance "zz" (the spec has a, b)`) {
		t.Errorf("unknown instance: %v", err)
	}
}

// chromium is the browser on PATH; without one the test fails unless -short
// (make deps installs Debian's chromium).
func chromium(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: no browser test")
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no chromium on PATH: make deps installs it (apt-get install chromium)")
	return ""
}

func headless(ctx context.Context, t *testing.T, browser string, args ...string) []byte {
	t.Helper()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--user-data-dir=" + t.TempDir()}
	cmd := exec.CommandContext(ctx, browser, append(base, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", browser, args, err, stderr.String())
	}
	return out
}

// artefactDir is where the browser test keeps its screenshot: $LUAGEN_ARTEFACTS,
// else artefacts/ at the repository's root (gitignored).
func artefactDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("LUAGEN_ARTEFACTS")
	if dir == "" {
		dir = filepath.Join("..", "..", "artefacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// A real browser loads the page written for the fixture's spec: the DOM it builds
// (after the page's own link check ran) has every key and script, every
// internal link resolves, the map has a box for each user, script, key and
// channel; and its screenshot (kept in the artefact folder) is a drawn page.
func TestPageInBrowser(t *testing.T) {
	browser := chromium(t)
	spec, srcs := fixture(t)
	dir := t.TempDir()
	path, err := Write(dir, spec, srcs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	url := "file://" + path
	dom := string(headless(ctx, t, browser, "--dump-dom", url))
	if !strings.Contains(dom, "</html>") {
		t.Fatalf("no DOM from the browser:\n%.500s", dom)
	}
	checkPage(t, dom, spec)
	m := regexp.MustCompile(`<body data-links="(\d+)" data-broken-links="([^"]*)">`).FindStringSubmatch(dom)
	if m == nil {
		t.Fatal("the page's link check did not run in the browser")
	}
	if n, _ := strconv.Atoi(m[1]); n < 10 || m[2] != "" {
		t.Errorf("in the browser: %s internal links, unresolved: %q", m[1], m[2])
	}
	nodes := strings.Count(dom, `class="node"`)
	want := len(spec.Channels)
	for _, k := range spec.Keys {
		if k.Live() {
			want++
		}
	}
	for _, s := range spec.Scripts {
		if s.Live() {
			want++
		}
	}
	want += len(spec.Users)
	if nodes != want {
		t.Errorf("the map has %d boxes, want %d (users, scripts, keys, channels)", nodes, want)
	}

	shot := filepath.Join(artefactDir(t), "catalog.png")
	os.Remove(shot)
	headless(ctx, t, browser, "--screenshot="+shot, "--window-size=1400,2400", "--hide-scrollbars", url)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	b := img.Bounds()
	if b.Dx() != 1400 || b.Dy() != 2400 {
		t.Errorf("screenshot is %dx%d", b.Dx(), b.Dy())
	}
	inked := 0
	for y := b.Min.Y; y < b.Max.Y; y += 4 {
		for x := b.Min.X; x < b.Max.X; x += 4 {
			if r, g, bl, _ := img.At(x, y).RGBA(); r+g+bl < 3*0xf000 {
				inked++
			}
		}
	}
	if total := (b.Dx() / 4) * (b.Dy() / 4); inked*100 < total*3 {
		t.Errorf("the screenshot is nearly blank: %d of %d sampled pixels inked", inked, total)
	}
	t.Logf("screenshot: %s", shot)
}
