# The two commands the README promises: `make generate` and `make test`.
GO ?= go
STATICCHECK = honnef.co/go/tools/cmd/staticcheck@v0.8.2
EXAMPLE = examples/apiservice
EXAMPLE2 = examples/cacheservice
EXAMPLE3 = examples/jobqueue
BENCH = bench
# Every Go module of the repository: the product, the three examples that use it,
# the comparison benchmarks.
MODULES = . $(EXAMPLE) $(EXAMPLE2) $(EXAMPLE3) $(BENCH)
# Where make test records the Lua coverage of the tests (gitignored).
COVER = artefacts/luacover
PG_HOST = 127.0.0.1
PG_PORT = 5432
# The instances whose alert rules and dashboards are committed in monitoring/.
MONITORED = vm1 vm2 elang

.PHONY: generate check lint test bench deps commands sizing-reports standalone

## generate: write generated/ from keyspec.yaml and lua/, and each example's package from its own spec
generate:
	$(GO) run ./cmd/luagen generate
	cd $(EXAMPLE) && $(GO) generate ./...
	cd $(EXAMPLE2) && $(GO) generate ./...
	cd $(EXAMPLE3) && $(GO) generate ./...
	cd $(BENCH) && $(GO) generate ./internal/rueidisgen
	@for i in $(MONITORED); do \
		$(GO) run ./cmd/luagen alerts --instance $$i --sizing-report monitoring/$$i.sizing.json --out monitoring/$$i.rules.yml --tests monitoring/$$i.rules.test.yml || exit 1; \
		$(GO) run ./cmd/luagen dashboards --instance $$i --out monitoring/$$i.dashboard.json || exit 1; \
	done

## sizing-reports: measure each monitored instance again (luagen sizing, a scratch redis-server) into
## monitoring/<instance>.sizing.json, the memory budget of the alert rules while maxmemory is unset; then make generate
sizing-reports:
	@for i in $(MONITORED); do echo "sizing $$i"; $(GO) run ./cmd/luagen sizing --instance $$i --format json > monitoring/$$i.sizing.json || exit 1; done

## commands: refresh gen/rediscmd's command table from the redis-server on PATH (COMMAND INFO and COMMAND DOCS)
commands:
	$(GO) test ./gen/rediscmd -run '^TestTableMatchesServer$$' -count=1 -update

## check: fail when generated/ (or an example's package, or the bench's copy) drifts from its spec and Lua
check:
	$(GO) run ./cmd/luagen check
	cd $(EXAMPLE) && $(GO) run github.com/hanchat/luagen/cmd/luagen check --spec keyspec.yaml --lua lua --out internal/redisgen
	cd $(EXAMPLE2) && $(GO) run github.com/hanchat/luagen/cmd/luagen check --spec keyspec.yaml --lua lua --out internal/redisgen
	cd $(EXAMPLE2) && $(GO) run github.com/hanchat/luagen/cmd/luagen check --spec keyspec.yaml --lua lua --out internal/rueidisgen --instance sessions --client rueidis
	cd $(EXAMPLE3) && $(GO) tool luagen check --spec keyspec.yaml --lua lua --out internal/redisgen
	$(GO) run ./cmd/luagen check --out bench/internal/rueidisgen --instance vm1 --client rueidis
	@for i in $(MONITORED); do \
		$(GO) run ./cmd/luagen alerts --instance $$i --sizing-report monitoring/$$i.sizing.json --check monitoring/$$i.rules.yml --tests monitoring/$$i.rules.test.yml || exit 1; \
		$(GO) run ./cmd/luagen dashboards --instance $$i --check monitoring/$$i.dashboard.json || exit 1; \
	done

## lint: gofmt, go vet and staticcheck of every module, and luagen lint
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); if [ -n "$$out" ]; then echo "gofmt would change: $$out"; exit 1; fi
	@for m in $(MODULES); do echo "vet and staticcheck: $$m"; (cd $$m && $(GO) vet ./... && $(GO) run $(STATICCHECK) ./...) || exit 1; done
	$(GO) run ./cmd/luagen lint
	cd $(EXAMPLE) && $(GO) run github.com/hanchat/luagen/cmd/luagen lint --spec keyspec.yaml --lua lua
	cd $(EXAMPLE2) && $(GO) run github.com/hanchat/luagen/cmd/luagen lint --spec keyspec.yaml --lua lua
	cd $(EXAMPLE3) && $(GO) tool luagen lint --spec keyspec.yaml --lua lua

## deps: what the tests need on this machine, each step only when it is missing:
## redis-server, prometheus and promtool, prometheus-redis-exporter, chromium for
## luagen doc's browser test (installed),
## PostgreSQL on 127.0.0.1:5432 (started) with database test (created), and the
## Go modules of every module (downloaded)
deps:
	@command -v redis-server >/dev/null 2>&1 || { echo "deps: installing redis-server"; apt-get update -q && apt-get install -y -q redis-server; }
	@redis-server --version
	@command -v chromium >/dev/null 2>&1 || { echo "deps: installing chromium"; apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium; }
	@{ command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1; } || { echo "deps: installing prometheus (prometheus, promtool)"; apt-get update -q && apt-get install -y -q --no-install-recommends prometheus; }
	@command -v prometheus-redis-exporter >/dev/null 2>&1 || { echo "deps: installing prometheus-redis-exporter"; apt-get update -q && apt-get install -y -q --no-install-recommends prometheus-redis-exporter; }
	@promtool --version | head -1
	@command -v pg_isready >/dev/null 2>&1 || { echo "deps: PostgreSQL is not installed: install it with trust auth for $(PG_HOST) (or run go test -short ./..., which needs neither it nor redis-server)"; exit 1; }
	@pg_isready -q -h $(PG_HOST) -p $(PG_PORT) || { echo "deps: PostgreSQL is down: starting it"; pg_ctlcluster --skip-systemctl-redirect $$(ls /etc/postgresql | head -1) main start; }
	@for i in $$(seq 100); do pg_isready -q -h $(PG_HOST) -p $(PG_PORT) && break; sleep 0.1; done; pg_isready -h $(PG_HOST) -p $(PG_PORT)
	@psql -h $(PG_HOST) -p $(PG_PORT) -U postgres -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = 'test'" | grep -q 1 || { echo "deps: creating database test"; createdb -h $(PG_HOST) -p $(PG_PORT) -U postgres test; }
	@for m in $(MODULES); do (cd $$m && $(GO) mod download) || exit 1; done
	@# go mod tidy of a new module using luagen (cmd/luagen's new-user tests run it offline) also
	@# reads the modules the tests of luagen's dependencies import: fetch them once when missing.
	@d=$$(mktemp -d) && trap 'rm -rf "$$d"' EXIT && cd "$$d" && export GOFLAGS=-mod=mod GOSUMDB=off && \
		$(GO) mod init example.com/warm >/dev/null 2>&1 && \
		$(GO) mod edit -replace=github.com/hanchat/luagen=$(CURDIR) -require=github.com/hanchat/luagen@v0.0.0-00010101000000-000000000000 -tool=github.com/hanchat/luagen/cmd/luagen && \
		$(GO) mod tidy && $(GO) tool luagen init >/dev/null && $(GO) generate ./... >/dev/null && \
		{ GOPROXY=off $(GO) mod tidy >/dev/null 2>&1 || { echo "deps: downloading the modules go mod tidy of a new luagen module needs"; $(GO) mod tidy; }; }

## test: everything CI runs: the tests (recording their Lua coverage), the
## coverage floors, the breaking check of the work tree against HEAD~1, and the
## tool's tests without its users (standalone)
test: deps check lint
	rm -rf $(COVER) && mkdir -p $(COVER)
	LUAGEN_COVER=$(CURDIR)/$(COVER) $(GO) test -race -count=1 ./...
	$(GO) run ./cmd/luagen cover --profile $(COVER) --check --html $(COVER)/index.html
	@if git rev-parse -q --verify 'HEAD~1^{commit}' >/dev/null 2>&1; then \
		$(GO) run ./cmd/luagen breaking --against HEAD~1; \
	else \
		echo "test: luagen breaking skipped: HEAD~1 is not in this clone (a shallow clone, or the first commit); fetch more history (git fetch --deepen=1) to check"; \
	fi
	cd $(EXAMPLE) && $(GO) test -race -count=1 ./...
	cd $(EXAMPLE2) && $(GO) test -race -count=1 ./...
	cd $(EXAMPLE3) && $(GO) test -race -count=1 ./...
	cd $(BENCH) && $(GO) test -count=1 ./...
	$(MAKE) standalone

## bench: the comparison benchmarks (module bench/) and the packages' own, against
## real redis-server processes the benchmarks start
bench: deps
	cd $(BENCH) && $(GO) test -run '^$$' -bench . -benchmem ./...
	$(GO) test -run '^$$' -bench . -benchmem ./...

## standalone: the tool's tests in a copy of the repository without its users
## (keyspec.yaml, lua/, generated/, services/, examples/ deleted): luagen stands alone
STANDALONE = artefacts/standalone
standalone:
	rm -rf $(STANDALONE) && mkdir -p $(STANDALONE)
	git ls-files -z --cached --others --exclude-standard | tar --null -T - --ignore-failed-read -cf - 2>/dev/null | tar -xf - -C $(STANDALONE)
	cd $(STANDALONE) && rm -rf keyspec.yaml lua generated services examples && $(GO) test -count=1 ./gen/... ./cmd/luagen ./runtime/... ./luatest
