# The two commands the README promises: `make generate` and `make test`.
GO ?= go
STATICCHECK = honnef.co/go/tools/cmd/staticcheck@v0.8.2
EXAMPLE = examples/apiservice
EXAMPLE2 = examples/cacheservice

.PHONY: generate check lint test bench deps commands

## generate: write generated/ from keyspec.yaml and lua/ (and the example's copy)
generate:
	$(GO) run ./cmd/luagen generate
	cd $(EXAMPLE) && $(GO) generate ./...
	cd $(EXAMPLE2) && $(GO) generate ./...

## commands: refresh gen/rediscmd's command table from the redis-server on PATH (COMMAND INFO and COMMAND DOCS)
commands:
	$(GO) test ./gen/rediscmd -run '^TestTableMatchesServer$$' -count=1 -update

## check: fail when generated/ (or the example's copy) drifts from keyspec.yaml or lua/
check:
	$(GO) run ./cmd/luagen check
	cd $(EXAMPLE) && $(GO) run github.com/hanchat/luagen/cmd/luagen check --spec ../../keyspec.yaml --lua ../../lua --out internal/redisgen --instance vm1
	cd $(EXAMPLE2) && $(GO) run github.com/hanchat/luagen/cmd/luagen check --spec keyspec.yaml --lua lua --out internal/redisgen

## lint: gofmt, go vet, staticcheck and luagen lint
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); if [ -n "$$out" ]; then echo "gofmt would change: $$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	$(GO) run ./cmd/luagen lint
	cd $(EXAMPLE) && $(GO) vet ./...
	cd $(EXAMPLE2) && $(GO) run github.com/hanchat/luagen/cmd/luagen lint --spec keyspec.yaml --lua lua
	cd $(EXAMPLE2) && $(GO) vet ./...

## deps: what the tests need on this machine: redis-server, PostgreSQL on 127.0.0.1:5432 with database test, Go modules
deps:
	@command -v redis-server >/dev/null 2>&1 || { echo "installing redis-server"; apt-get update -q && apt-get install -y -q redis-server; }
	@pg_isready -q -h 127.0.0.1 -p 5432 || { echo "starting PostgreSQL"; pg_ctlcluster --skip-systemctl-redirect $$(ls /etc/postgresql | head -1) main start; }
	@psql -h 127.0.0.1 -U postgres -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = 'test'" | grep -q 1 || createdb -h 127.0.0.1 -U postgres test
	$(GO) mod download
	cd $(EXAMPLE) && $(GO) mod download
	cd $(EXAMPLE2) && $(GO) mod download

## test: everything CI runs
test: deps check lint
	$(GO) test -race -count=1 ./...
	cd $(EXAMPLE) && $(GO) build ./...
	cd $(EXAMPLE2) && $(GO) test -race -count=1 ./...

## bench: benchmarks against real redis-server processes the benchmarks start
bench: deps
	$(GO) test -run '^$$' -bench . -benchmem ./...
