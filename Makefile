# rebound: developer commands. `make help` lists them.
#
# Tools are pinned and installed by scripts/setup.sh into the git-ignored
# cache .cache/ (nothing global). Override any variable on the command line,
# e.g. `make run PLAN=examples/plans/other.yaml`.

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

GO        ?= go
CACHE     := $(CURDIR)/.cache
REBOUND   := $(CACHE)/bin/rebound
PLAN      ?= examples/plans/quickstart.yaml
RUN_ARGS  ?=
# Where the local stack keeps its state (removed by `make clean`).
DATA_DIRS ?= data

# `make histories` records the workflow histories that the replay test
# checks into workflows/testdata/histories/$(HISTORIES_SET)/.
HISTORIES_SET ?= $(shell date -u +%Y-%m-%d)

# The build's stamp (internal/buildinfo, `rebound version`): the tag at HEAD
# if there is one (else "devel"), the commit, and whether the tree has
# uncommitted changes. Override VERSION=v1.2.3 for a release build.
VERSION  ?= $(shell git describe --tags --exact-match 2>/dev/null)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)
MODIFIED ?= $(shell test -n "$$(git status --porcelain --untracked-files=no 2>/dev/null)" && echo true)
BUILD_LDFLAGS := -X rebound/internal/buildinfo.version=$(VERSION) -X rebound/internal/buildinfo.revision=$(REVISION) -X rebound/internal/buildinfo.modified=$(MODIFIED)

TEST_TIMEOUT ?= 20m
TEST_FLAGS   ?=
PKGS         ?= ./...

# Fuzzing: `make fuzz` runs the scenario loader's and the importer's fuzz
# targets for a short while each; `make test` includes it (FUZZ_IN_TEST=
# turns it off).
FUZZ         ?= FuzzLoad FuzzImport
FUZZ_PKG     ?= ./core/scenario/
FUZZTIME     ?= 10s
FUZZ_IN_TEST ?= fuzz

# The tools for the commands that need them; an explicit environment wins.
REBOUND_TEMPORAL_BIN ?= $(CACHE)/bin/temporal
REBOUND_CHDB_LIB     ?= $(CACHE)/chdb/libchdb.so
REBOUND_HELM_BIN     ?= $(CACHE)/bin/helm
TOOLS_ENV := REBOUND_TEMPORAL_BIN="$(REBOUND_TEMPORAL_BIN)" REBOUND_CHDB_LIB="$(REBOUND_CHDB_LIB)" REBOUND_HELM_BIN="$(REBOUND_HELM_BIN)"

.PHONY: help setup build run test unit vet lint fmt staticcheck workflowcheck complexity chart fuzz clean histories oracle bench bench-read bench-sweep bench-served

help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-z-]+:.*## / {printf "  make %-13s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

setup: ## install the pinned tools into .cache/ (Temporal CLI, helm, libchdb, example agents); fast when done
	@scripts/setup.sh

build: ## build the rebound binary into .cache/bin/rebound, stamped with its version and revision
	$(GO) build -ldflags "$(BUILD_LDFLAGS)" -o $(REBOUND) ./cmd/rebound

run: setup build ## run the quickstart sweep on the local stack (PLAN=... to pick another plan)
	$(TOOLS_ENV) $(REBOUND) run $(PLAN) $(RUN_ARGS)

test: setup vet lint chart $(FUZZ_IN_TEST) ## everything CI runs: vet, lint, chart lint, unit and integration tests
	$(TOOLS_ENV) REBOUND_REQUIRE_INTEGRATION=1 $(GO) test -timeout $(TEST_TIMEOUT) $(TEST_FLAGS) $(PKGS)

unit: ## the fast layer: go test -short, no setup, no servers
	$(GO) test -short $(TEST_FLAGS) $(PKGS)

vet: ## go vet
	$(GO) vet $(PKGS)

# The static checks (docs/development.md, "Static checks"). The tools are
# pinned in go.mod (tool directives) and run with `go tool`: nothing to
# install. Each has its own target; `make lint` runs them all.
lint: fmt staticcheck workflowcheck complexity ## every static check: gofmt, staticcheck, workflowcheck, the complexity ratchet

fmt: ## list the Go files gofmt would change, tracked or new (fails if any but those in scripts/lint/gofmt.allow)
	@scripts/lint/gofmt.sh

staticcheck: ## staticcheck over every package (allowed findings: scripts/lint/staticcheck.allow)
	@scripts/lint/staticcheck.sh

workflowcheck: ## Temporal's workflowcheck: no non-deterministic call reachable from workflows/
	$(GO) tool workflowcheck ./workflows/...

complexity: ## the ratchet: no function over cyclomatic complexity 30 but those in scripts/lint/complexity.allow
	@scripts/lint/complexity.sh

chart: setup ## helm lint --strict and helm template of helm/rebound (assertions: deploy/helm_test.go)
	$(REBOUND_HELM_BIN) lint --strict helm/rebound
	$(REBOUND_HELM_BIN) template rebound helm/rebound >/dev/null

# Sweeps at scale (docs/development.md, "Benchmarks of sweeps"): each plan
# scaled by its seeds to about BENCH_TRIALS trials, run end to end with
# `rebound run` on the embedded stack (trials/s, CPU per trial, peak RSS),
# beside the in-process ceiling of the same trials and the embedded insert
# rate of their tool-call rows; then the growth rows, the last plan at
# 240,000 trials in 60,000-trial slices (BENCH_ARGS=-growth=0 skips them).
BENCH_PLANS  ?= examples/plans/quickstart.yaml examples/plans/library.yaml
BENCH_TRIALS ?= 60720
BENCH_ARGS   ?=
# The worker of `rebound run` needs a redaction key; an explicit one wins.
REBOUND_REDACTION_KEY ?= sweepbench-redaction-key-not-a-secret-0123

bench-sweep: setup build ## sweep benchmarks: BENCH_PLANS at BENCH_TRIALS trials end to end, in process, inserts; growth (2-5 min on 2 shared cores)
	$(TOOLS_ENV) REBOUND_REDACTION_KEY="$(REBOUND_REDACTION_KEY)" \
		$(GO) run ./internal/runner/sweepbench -rebound $(REBOUND) -trials $(BENCH_TRIALS) $(BENCH_ARGS) $(BENCH_PLANS)

# The grader's independent oracle, long run: generated scenarios, mutant
# agents, invariants; prints the summary table and one minimized example per
# violation class (make test runs 10,000).
ORACLE_N    ?= 200000
ORACLE_SEED ?= 1000000

oracle: ## long oracle run: ORACLE_N generated scenarios against the grader (default 200000)
	$(GO) test ./core/oracle/ -run Generated -count=1 -timeout 0 -v -args -n $(ORACLE_N) -seed $(ORACLE_SEED)

bench: bench-read bench-sweep ## every benchmark: reads at a million trials, then sweeps at 60,720 and 240,000 trials (2-5 min on 2 shared cores)

bench-read: setup build ## report and compare over a synthetic 1,000,000-trial sweep (time, peak RSS)
	$(TOOLS_ENV) REBOUND_BIN="$(REBOUND)" $(GO) test -run '^$$' -bench . -benchtime 1x -timeout 30m ./results/report/readbench/

bench-served: setup build ## report and compare at 60,720 and 1,000,000 trials, in process and through the served store (issue 30: at most 1.5x; about 5 min)
	$(TOOLS_ENV) REBOUND_BIN="$(REBOUND)" $(GO) test -run '^$$' -bench ServedRead -benchtime 1x -timeout 30m ./storage/served/

fuzz: ## short fuzz runs, one per target (FUZZ="FuzzLoad FuzzImport" FUZZ_PKG=./core/scenario/ FUZZTIME=10s)
	@for f in $(FUZZ); do \
		echo "$(GO) test -run='^$$' -fuzz='^$$f$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=3s $(FUZZ_PKG)"; \
		$(GO) test -run='^$$' -fuzz="^$$f\$$" -fuzztime=$(FUZZTIME) -fuzzminimizetime=3s $(FUZZ_PKG) || exit 1; \
	done

histories: setup ## record workflow histories from real sweeps on a dev server (HISTORIES_SET=name, default today)
	$(TOOLS_ENV) REBOUND_REQUIRE_INTEGRATION=1 REBOUND_RECORD_HISTORIES="$(HISTORIES_SET)" \
		$(GO) test -count=1 -timeout 15m -run '^TestRecordHistories$$' -v ./workflows/internal/histories/

clean: ## remove .cache/ (tools, build) and the local data dirs (DATA_DIRS)
	rm -rf $(CACHE) $(DATA_DIRS)
