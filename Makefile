# toolrouterd — the two commands are `make run` and `make test`
# (`make test-unit` is the fast tier for the edit-run loop).
SHELL := bash
.SHELLFLAGS := -o pipefail -ec
GO      ?= go
BIN     := bin
ADDR    ?= 127.0.0.1:8080
# Unset: 127.0.0.1:9001 and 127.0.0.1:9002, or a free port when taken
# (scripts/run-example.sh); LLM_ADDR=off starts no offline model.
TOOLS_ADDR ?=
LLM_ADDR ?=
STORE   ?= sqlite://toolrouter.db
REGISTRY ?= examples/registry.yaml

.PHONY: all build run test test-race test-unit deps vet lint cross bench bench-go bench-load bench-store bench-mcp bench-compare bench-mcp-table bench-callgrind bench-context fmt clean

all: build

# `toolrouterd version` and /mcp's serverInfo.version: the checkout's
# `git describe` and commit, linked in (empty outside git: the binary then
# reports Go's build information, or "devel").
VERSION := $(shell git describe --tags --always --dirty 2>/dev/null)
COMMIT  := $(shell git rev-parse --short HEAD 2>/dev/null)
LDFLAGS := -X main.version=$(VERSION) -X main.commit=$(COMMIT)

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/toolrouterd ./cmd/toolrouterd
	$(GO) build -o $(BIN)/exampletools ./cmd/exampletools
	$(GO) build -o $(BIN)/fakellm ./cmd/fakellm

# Starts the example tool server, an offline stand-in model (fakellm
# -demo) and toolrouterd with the example registry (REGISTRY: another of
# examples/registry-*.yaml; scripts/run-example.sh: fails fast on a taken
# ADDR, picks free ports for the others, prints the quickstart command and
# the pid for SIGHUP). Ctrl-C stops them all and exits 0.
run: build
	@$(BIN)/toolrouterd check $(REGISTRY)
	@ADDR=$(ADDR) TOOLS_ADDR=$(TOOLS_ADDR) LLM_ADDR=$(LLM_ADDR) STORE=$(STORE) REGISTRY=$(REGISTRY) BIN=$(BIN) bash scripts/run-example.sh

# Everything: vet, unit, golden, godog features and integration tests that
# start the real binaries. No test skips for want of a tool: deps installs
# what is missing first.
# vet and staticcheck analyse the race build (-race), the one the tests
# compile, so a cold machine compiles the standard library and the
# dependencies once, for the tests, instead of once more for the checks
# (docs/development.md, what make test spends). vet goes first, alone
# but for the staticcheck binary's own build (no package in common): from
# an empty build cache it is the compile of every package the tests import,
# which the tests and staticcheck then find in the cache instead of
# compiling the same packages at the same time in three go commands; warm,
# it takes seconds. lint and cross then run beside the tests: the tests'
# longest package (e2e) mostly waits on the processes it starts.
# make test fails if any of them fails.
test: deps
	@$(MAKE) --no-print-directory -j2 --output-sync=line vet $(STATICCHECK)
	@$(MAKE) --no-print-directory -j4 --output-sync=line test-race lint cross

# e2e, the longest package, takes about 5 min on 2 cores (docs/development.md):
# the timeout is far above it so a loaded machine fails no test by time.
# -ldflags=-w: the test binaries are linked without DWARF, which nothing
# reads (panics, test failures and the race detector's reports take file
# and line from the symbol table and pclntab, which stay). Linking the race
# test binaries is a large part of a run's CPU, warm or cold, and DWARF
# about a quarter of each link (internal/httpapi's: 3.8 s of CPU, 2.7 s
# without; about 75 binaries).
test-race:
	$(GO) test -race -count=1 -ldflags=-w -timeout 25m ./...

# The fast tier, for the edit-run loop: no binary built or started, no
# server (no PostgreSQL, Helm, Chromium or Node.js). Every package but e2e
# (the real binaries) and features (every scenario wires the whole
# service), with -short: pgtest.Start and the Helm tests skip. No -race
# and no deps, vet or lint: `make test` runs all of it.
UNIT_PKGS = $(shell $(GO) list ./... | grep -v -e '/e2e$$' -e '/features$$')

test-unit:
	$(GO) test -short -count=1 $(UNIT_PKGS)

# What the tests need besides Go (gcc for -race, PostgreSQL, Node.js and the
# MCP reference server, Chromium for the console test), installed when
# missing; silent when all is there.
deps:
	@bash scripts/install-test-deps.sh

# -race: the build the tests compile (see test).
vet:
	$(GO) vet -race ./...

# The binaries build for windows and darwin too: every package the cmd
# packages import, the standard library included, and the cmd packages,
# type-checked from source for each OS with cgo off (scripts/typecheck,
# go/packages), function bodies and all; any error fails naming its file
# and line. That is what a cross build proves about this code: which files
# each OS's build constraints take, and that every name they use exists on
# that OS (syscall.Kill, unix.* and the like). The compiler's work after
# type-checking (code generation, linking pure Go) does not depend on the
# OS's choice of files, and compiling cost the standard library and every
# dependency once per OS from an empty build cache (235 s of CPU for both;
# type-checking both: about 20 s, nothing cached or needed).
# Windows has the widest difference from linux (no unix syscalls, other
# files of os, net, syscall); darwin is the other OS people run it on.
cross:
	$(GO) run ./scripts/typecheck -goos windows,darwin ./cmd/...

# The pinned staticcheck is built once per machine into a cache outside the
# clone, one directory per tool and version (a bump builds the new
# version), and every clone reuses it. TOOLS_CACHE overrides the directory.
# (Helm for the chart tests is tools/helm, which deployments/helm_test.go
# builds into the Go build cache, also once per machine.)
TOOLS_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/toolrouterd/tools

# staticcheck, pinned (v0.8.2: the newest release, made for Go 1.26), built
# into the tool cache on first use. Deliberate exceptions carry
# //lint:ignore and their reason. STATICCHECK overrides the binary.
STATICCHECK_VERSION := v0.8.2
STATICCHECK ?= $(TOOLS_CACHE)/staticcheck-$(STATICCHECK_VERSION)/staticcheck

$(STATICCHECK):
	GOBIN=$(abspath $(dir $@)) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

# GOFLAGS -race: staticcheck's `go list -export` then takes the race
# build's export data, which the tests compile anyway (see test).
lint: $(STATICCHECK)
	GOFLAGS="$$($(GO) env GOFLAGS) -race" $(STATICCHECK) ./...

# Benchmarks (not part of `make test`): Go benchmarks of the hot path, then
# a load run against the real binary, a direct tool and nginx.
bench: bench-go bench-load bench-store bench-mcp bench-compare

# BenchmarkRouteTracing (httpapi) is tracing's cost: nil, off (the
# default), on; TestTracingOffCostsNoAllocations, exact only without -race,
# checks that off adds no allocation.
bench-go:
	$(GO) test -run='^TestTracingOffCostsNoAllocations$$' -bench=. -benchmem -count=1 ./internal/format/ ./internal/router/ ./internal/remote/ ./internal/httpapi/

bench-load: build
	bash bench/load.sh

# What the model is offered per turn: a catalogue of 205 real MCP tool
# definitions listed in full against tool search (meta-tools + one
# answer), in OpenAI (o200k_base) and Anthropic tokens, and the search's
# recall@5 on 116 labelled tasks (bench/context;
# docs/output-budgets.md "What full lists and tool search cost"); then 23
# multi-step tasks played in full, search and code discovery: the tokens
# through the model and the calls made (docs/output-budgets.md
# "Multi-step tasks: full, search and code").
bench-context:
	GO=$(GO) bash bench/context/run.sh

# toolrouterd → MCP echo tool against calling the MCP server directly.
bench-mcp: build
	bash bench/mcp.sh

# The side-by-side table of issue 10: direct, nginx, toolrouterd on each
# store, MCP direct and through toolrouterd; pinned, interleaved rounds,
# server CPU per call; then a 60 s soak (RSS and goroutines).
bench-compare: build
	bash bench/compare.sh

# Instructions per call under valgrind's callgrind (bench/README.md
# "/route in instructions"): go-proxy, router-memory, router-sqlite and
# BENCH_CG_ABLATE's builds; counts, not times, so a loaded machine does
# not move them.
bench-callgrind: build
	bash bench/callgrind.sh

# The MCP tools/call overhead table (docs/benchmarks.md): an MCP client
# direct against through toolrouterd's /mcp on each store, at 100, 500 and
# 1,000 calls/s; pinned, interleaved rounds, p50/p99/p99.9 added, CPU per call.
bench-mcp-table: build
	bash bench/mcp-table.sh

# Routes per second per store: PostgreSQL (3 replicas), SQLite, memory.
bench-store:
	bash scripts/install-postgres.sh
	TOOLROUTER_BENCH=1 $(GO) test -count=1 -run TestStoreThroughput -v -timeout 10m ./e2e/ | grep -v '^=== RUN'

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf $(BIN) toolrouter.db toolrouter.db-wal toolrouter.db-shm
