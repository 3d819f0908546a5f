# make test: vet, format check, every test under the race detector (Redis tests required,
# never skipped), the nested modules' tests (and vet), then a brief fuzz of each algorithm;
# at the end, how many tests ran, were skipped and failed. make run: the CLI demo.
GO       ?= go
SUDO     := $(shell [ "$$(id -u)" = 0 ] || ! command -v sudo >/dev/null 2>&1 || echo sudo)
# MODULES are the nested modules, each with its own go.mod, that make test and make vet
# cover beside the main one: a new module is one word here.
MODULES  := grpclimit otellimit ginlimit echolimit fiberlimit rls
# REDIS_MIN is the oldest Redis major version the suite runs on: it tests the Redis 7
# functions (FUNCTION LOAD, FCALL) and reads TTLs with PEXPIRETIME.
REDIS_MIN := 7
FUZZTIME ?= 3s
FUZZ     := FuzzFixedWindow FuzzSlidingLog FuzzSlidingCounter FuzzTokenBucket FuzzLeakyBucket FuzzGCRA
# Go against the Lua twins over every validated config; starts its own redis-server.
FUZZ     += FuzzLuaDifferentialConfigs
# Rate strings ("100/min", "100-M"): never a panic, and Quota.String reads back.
FUZZ     += FuzzParseQuota
# Fuzz targets of the root package: the model-based test, on the local store (model_test.go).
FUZZROOT := FuzzModel

.PHONY: test run vet fuzz redis-server bench release

# Every step runs even when an earlier one fails (go test itself goes on past a failing
# package), so one run shows every failure; the target fails at the end if any step did.
# go test -json goes through internal/testsum, which prints what plain go test prints (the
# ok/FAIL lines, the failing tests' output) and keeps the counts for the last line.
# TEST_TIMEOUT bounds each test binary: the distributed package under -race takes ~5 min
# on a quiet 2-core VM and ~9 beside two CPU burners, close to go test's 10 min default.
TEST_TIMEOUT ?= 30m

test: redis-server
	@failed=""; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	$(GO) build -o "$$tmp/testsum" ./internal/testsum || exit 1; \
	sum() { "$$tmp/testsum" -tally "$$tmp/tally"; }; \
	$(MAKE) --no-print-directory vet || failed="$$failed vet"; \
	LIMITER_REQUIRE_REDIS=1 $(GO) test -json -race -count=1 -timeout=$(TEST_TIMEOUT) ./... | sum || failed="$$failed go-test"; \
	echo "# the conformance suite on a batching Redis store (skipped under -race: time budget)"; \
	LIMITER_REQUIRE_REDIS=1 $(GO) test -json -count=1 -run '^TestBatchingSingleNode$$/^Conformance$$' ./distributed | sum \
		|| failed="$$failed batching-conformance"; \
	for m in $(MODULES); do \
		echo "# the nested module $$m (its own go.mod)"; \
		(cd $$m && LIMITER_REQUIRE_REDIS=1 $(GO) test -json -race -count=1 -timeout=$(TEST_TIMEOUT) ./...) | sum || failed="$$failed $$m-test"; \
	done; \
	$(MAKE) --no-print-directory fuzz || failed="$$failed fuzz"; \
	echo "make test: $$("$$tmp/testsum" -total "$$tmp/tally")"; \
	if [ -n "$$failed" ]; then echo "make test: FAILED:$$failed" >&2; exit 1; fi; \
	echo "make test: all steps passed"

vet:
	$(GO) vet ./...
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@for m in $(MODULES); do echo "cd $$m && $(GO) vet ./..."; (cd $$m && $(GO) vet ./...) || exit 1; done

# RUNSVG is where make run writes its chart: outside the tree by default, so that the demo
# leaves the checkout as it was (docs/sim-token-bucket.svg is the same chart, committed:
# make run RUNSVG=docs/sim-token-bucket.svg renews it).
RUNSVG ?= $(or $(TMPDIR),/tmp)/ratekit-sim-token-bucket.svg
run:
	$(GO) run ./cmd/ratekit sim --algo token-bucket --rate 10 --burst 20 --traffic burst --duration 10s --svg $(RUNSVG)

# fuzz runs each fuzz target of the algorithms, then the model-based one, briefly (FUZZTIME each).
# A target fails on a failing input (the fuzzer writes it to testdata/fuzz) or a failing
# seed, not on Go's own race at the end of -fuzztime (go1.26's coordinator may report the
# expired -fuzztime itself as "context deadline exceeded", with no input: golang/go#75804,
# fixed in go1.27; seen beside CPU burners).
fuzz:
	@failed=""; \
	fuzz1() { out=$$(mktemp); "$$@" > "$$out" 2>&1; st=$$?; cat "$$out"; \
		if [ $$st -ne 0 ] && ! grep -q 'Failing input written' "$$out" && grep -q '^    context deadline exceeded$$' "$$out" && \
			! grep -q -- '--- FAIL: Fuzz[A-Za-z]*/' "$$out"; then \
			echo "fuzz: the end of -fuzztime raced a worker (golang/go#75804), no failing input: not a failure"; st=0; fi; \
		rm -f "$$out"; return $$st; }; \
	for t in $(FUZZ); do \
		echo "fuzz $$t ($(FUZZTIME))"; \
		fuzz1 env LIMITER_REQUIRE_REDIS=1 $(GO) test -run='^$$' -fuzz="^$$t$$" -fuzztime=$(FUZZTIME) ./algo || failed="$$failed $$t"; \
	done; \
	for t in $(FUZZROOT); do \
		echo "fuzz $$t ($(FUZZTIME))"; \
		fuzz1 $(GO) test -run='^$$' -fuzz="^$$t$$" -fuzztime=$(FUZZTIME) . || failed="$$failed $$t"; \
	done; \
	if [ -n "$$failed" ]; then echo "fuzz: FAILED:$$failed" >&2; exit 1; fi

# bench runs the side-by-side benchmarks of the bench module (its own go.mod, so the peers
# never reach the library's go.sum), then bench/cmd/chart prints the tables and the goals
# of issue 23 judged on the run (met or not); the benchmarks start their own throw-away
# redis-server on a free port (BENCH_REDIS_ADDR=host:port uses another one, which they
# FLUSHALL). BENCHOUT keeps the raw output; BENCHSVG is the chart it writes; BENCHDOC the
# Markdown file whose generated section (between <!-- chart:begin --> and
# <!-- chart:end -->) it rewrites (BENCHDOC= leaves it alone). BENCHTIME, when set, is
# passed as -benchtime (e.g. BENCHTIME=100ms for a quick check of the whole pipeline; the
# figures are then meaningless).
BENCHOUT  ?= bench/bench.txt
BENCHSVG  ?= docs/benchmarks.svg
BENCHDOC  ?= docs/benchmarks.md
BENCHTIME ?=
bench: redis-server
	cd bench && $(GO) test -run='^$$' -bench=. -benchmem -count=1 $(if $(BENCHTIME),-benchtime=$(BENCHTIME)) -timeout=30m . | tee $(abspath $(BENCHOUT))
	@grep -q '^ok' $(BENCHOUT) || { echo "bench: the benchmarks failed" >&2; exit 1; }
	cd bench && $(GO) run ./cmd/chart -svg $(abspath $(BENCHSVG)) $(if $(BENCHDOC),-doc $(abspath $(BENCHDOC))) < $(abspath $(BENCHOUT))

# release VERSION=vX.Y.Z prepares a release of every module of the repository at once, as
# multi-module repositories do (OpenTelemetry-Go's multimod): each nested module requires the
# core at VERSION, so that `go get github.com/ratekit/limiter/ginlimit@VERSION` resolves the
# core a user needs (a replace is ignored in a dependency); its replace of the core by ../
# stays, for development on the working tree. Each module is then tidied, built and vetted
# against the working tree (what VERSION will be), the API is recorded in api/VERSION.txt
# (make test keeps the next versions compatible with it: internal/apicheck), and the tags to
# push are printed, core first. CHANGELOG.md must have a "## VERSION" section.
CORE := github.com/ratekit/limiter
release:
	@case "$(VERSION)" in v[0-9]*.[0-9]*.[0-9]*) ;; *) echo "make release: VERSION=vMAJOR.MINOR.PATCH is needed (got '$(VERSION)')" >&2; exit 1;; esac
	@grep -q '^## $(VERSION)' CHANGELOG.md || { echo "make release: CHANGELOG.md has no '## $(VERSION)' section" >&2; exit 1; }
	@for m in $(MODULES); do \
		echo "# $$m: require $(CORE) $(VERSION)"; \
		(cd $$m && $(GO) mod edit -require=$(CORE)@$(VERSION) -replace=$(CORE)=../ && \
			$(GO) mod tidy && $(GO) build ./... && $(GO) vet ./...) || { echo "make release: $$m does not build" >&2; exit 1; }; \
	done
	@mkdir -p api
	$(GO) run ./internal/apicheck -write api/$(VERSION).txt
	@echo "commit, then push the tags, the core's first:"; \
	echo "  git tag $(VERSION)"; \
	for m in $(MODULES); do echo "  git tag $$m/$(VERSION)"; done; \
	echo "  git push origin $(VERSION) $(foreach m,$(MODULES),$(m)/$(VERSION))"

# redis-server installs Redis when redis-server is missing, with the first package manager
# found (apt-get, dnf, yum, apk, pacman, brew), or stops with one line saying what to
# install; then it checks that redis-server is Redis REDIS_MIN or newer. The Redis tests
# start their own throw-away servers from it.
REDIS_HINT := install Redis $(REDIS_MIN) or newer so that redis-server is on the PATH
redis-server:
	@if ! command -v redis-server >/dev/null 2>&1; then \
		if command -v apt-get >/dev/null 2>&1; then \
			install="$(SUDO) apt-get update -q && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q redis-server"; \
		elif command -v dnf >/dev/null 2>&1; then install="$(SUDO) dnf install -y redis"; \
		elif command -v yum >/dev/null 2>&1; then install="$(SUDO) yum install -y redis"; \
		elif command -v apk >/dev/null 2>&1; then install="$(SUDO) apk add --no-cache redis"; \
		elif command -v pacman >/dev/null 2>&1; then install="$(SUDO) pacman -S --noconfirm --needed redis"; \
		elif command -v brew >/dev/null 2>&1; then install="brew install redis"; \
		else echo "make: redis-server is missing and no known package manager (apt-get, dnf, yum, apk, pacman, brew) was found: $(REDIS_HINT)" >&2; exit 1; fi; \
		echo "installing redis-server: $$install"; \
		{ sh -c "$$install" && command -v redis-server >/dev/null 2>&1; } || \
			{ echo "make: could not install redis-server ($$install): $(REDIS_HINT)" >&2; exit 1; }; \
	fi; \
	v=$$(redis-server --version | sed -n 's/.* v=\([0-9][0-9]*\)\..*/\1/p'); \
	if [ -z "$$v" ] || [ "$$v" -lt $(REDIS_MIN) ]; then \
		echo "make: the suite needs Redis $(REDIS_MIN) or newer, and redis-server is $$(redis-server --version | cut -d' ' -f1-3): $(REDIS_HINT)" >&2; exit 1; \
	fi
