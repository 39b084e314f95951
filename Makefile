# Lasso: the two commands are `make run` and `make test`.
GO      ?= go
BIN     := bin/lasso
VERSION := $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)

.PHONY: help run build test test-go test-compat vet fmt fuzz bench clean

help: ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

build: ## build bin/lasso (static, CGO-free)
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/lasso

run: build ## start Lasso on SQLite in ./lasso-data (http://127.0.0.1:8080)
	./$(BIN) serve --data-dir ./lasso-data

test: vet test-go test-compat ## run every test (PostgreSQL too when LASSO_TEST_POSTGRES_URL is set)

vet:
	@test -z "$$(gofmt -l cmd internal bench 2>/dev/null)" || (echo "gofmt needed:"; gofmt -l cmd internal bench; exit 1)
	$(GO) vet ./...

test-go:
	$(GO) test -count=1 ./...

test-compat: build ## official loops@7.3.0 SDK against a live server (needs node)
	@if command -v node >/dev/null 2>&1 && [ -f compat/package.json ]; then \
		cd compat && npm ci --no-audit --no-fund --loglevel=error && LASSO_BIN=../$(BIN) node --test; \
	else echo "test-compat: node not found, skipped"; fi

fuzz: ## run the fuzz targets for a minute each
	$(GO) test -run='^$$' -fuzz=FuzzAPIRequest -fuzztime=60s -parallel=1 ./internal/app/

bench: build ## load benchmark (see bench/README.md)
	bash bench/run.sh

clean:
	rm -rf bin
