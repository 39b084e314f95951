# Lasso: the two commands are `make run` and `make test`.
GO      ?= go
BIN     := bin/lasso
VERSION := $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)

.PHONY: help run build test test-go test-compat test-e2e node-deps vet fmt fuzz bench clean

help: ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

build: ## build bin/lasso (static, CGO-free)
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/lasso

run: build ## start Lasso on SQLite in ./lasso-data (http://127.0.0.1:8080)
	./$(BIN) serve --data-dir ./lasso-data

# Node packages used by tests (validators, SMTP clients, the SDK, the browser).
NODE_DIRS := $(dir $(wildcard internal/*/testdata/*/package-lock.json compat/package-lock.json e2e/package-lock.json))

test: vet node-deps test-go test-compat test-e2e ## run every test (PostgreSQL too when LASSO_TEST_POSTGRES_URL is set)

node-deps: ## npm ci in every test package that has a lock file (when node is present)
	@if command -v npm >/dev/null 2>&1; then \
		for d in $(NODE_DIRS); do (cd $$d && npm ci --no-audit --no-fund --loglevel=error) || exit 1; done; \
	else echo "node-deps: npm not found, node-based tests will skip"; fi

vet:
	@test -z "$$(gofmt -l cmd internal bench 2>/dev/null)" || (echo "gofmt needed:"; gofmt -l cmd internal bench; exit 1)
	$(GO) vet ./...

test-go:
	$(GO) test -count=1 ./...

test-compat: build ## official loops@7.3.0 SDK against a live server (needs node)
	@if command -v node >/dev/null 2>&1 && [ -d compat/node_modules ]; then \
		cd compat && LASSO_BIN=../$(BIN) node --test; \
	else echo "test-compat: node not found, skipped"; fi

test-e2e: build ## dashboard browser tests (needs node and chromium)
	@if command -v node >/dev/null 2>&1 && [ -d e2e/node_modules ]; then \
		cd e2e && LASSO_BIN=../$(BIN) node --test; \
	else echo "test-e2e: node or e2e deps not found, skipped"; fi

FUZZTIME ?= 60s
fuzz: ## run every fuzz target for FUZZTIME each (seeds are kept in testdata/fuzz and run by make test)
	$(GO) test -run='^$$' -fuzz=FuzzAPIRequest -fuzztime=$(FUZZTIME) -parallel=1 ./internal/app/
	$(GO) test -run='^$$' -fuzz=FuzzParse -fuzztime=$(FUZZTIME) ./internal/lmx/
	$(GO) test -run='^$$' -fuzz=FuzzParse -fuzztime=$(FUZZTIME) ./internal/bounce/
	$(GO) test -run='^$$' -fuzz=FuzzExtractJSON -fuzztime=$(FUZZTIME) ./internal/smtpd/
	$(GO) test -run='^$$' -fuzz=FuzzRewrite -fuzztime=$(FUZZTIME) ./internal/tracking/
	$(GO) test -run='^$$' -fuzz=FuzzParseFilter -fuzztime=$(FUZZTIME) ./internal/audience/
	$(GO) test -run='^$$' -fuzz=FuzzParseDate -fuzztime=$(FUZZTIME) ./internal/contacts/
	$(GO) test -run='^$$' -fuzz=FuzzNormalizeEmail -fuzztime=$(FUZZTIME) ./internal/contacts/

bench: build ## load benchmark (see bench/README.md)
	bash bench/run.sh

clean:
	rm -rf bin
