# make test: vet, format check, every test under the race detector (Redis tests required,
# never skipped), the nested grpclimit and otellimit modules' tests (and vet), then a brief fuzz of each
# algorithm. make run: the CLI demo.
GO       ?= go
SUDO     := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
FUZZTIME ?= 3s
FUZZ     := FuzzFixedWindow FuzzSlidingLog FuzzSlidingCounter FuzzTokenBucket FuzzLeakyBucket FuzzGCRA
# Go against the Lua twins over every validated config; starts its own redis-server.
FUZZ     += FuzzLuaDifferentialConfigs
# Fuzz targets of the root package: the model-based test, on the local store (model_test.go).
FUZZROOT := FuzzModel

.PHONY: test run vet fuzz redis-server bench

# Every step runs even when an earlier one fails (go test itself goes on past a failing
# package), so one run shows every failure; the target fails at the end if any step did.
test: redis-server
	@failed=""; \
	$(MAKE) --no-print-directory vet || failed="$$failed vet"; \
	LIMITER_REQUIRE_REDIS=1 $(GO) test -race -count=1 ./... || failed="$$failed go-test"; \
	echo "# the conformance suite on a batching Redis store (skipped under -race: time budget)"; \
	LIMITER_REQUIRE_REDIS=1 $(GO) test -count=1 -run '^TestBatchingSingleNode$$/^Conformance$$' ./distributed \
		|| failed="$$failed batching-conformance"; \
	echo "# the nested module grpclimit (its own go.mod)"; \
	(cd grpclimit && $(GO) test -race -count=1 ./...) || failed="$$failed grpclimit-test"; \
	echo "# the nested module otellimit (its own go.mod)"; \
	(cd otellimit && $(GO) test -race -count=1 ./...) || failed="$$failed otellimit-test"; \
	$(MAKE) --no-print-directory fuzz || failed="$$failed fuzz"; \
	if [ -n "$$failed" ]; then echo "make test: FAILED:$$failed" >&2; exit 1; fi; \
	echo "make test: all steps passed"

vet:
	$(GO) vet ./...
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	cd grpclimit && $(GO) vet ./...
	cd otellimit && $(GO) vet ./...

run:
	$(GO) run ./cmd/ratekit sim --algo token-bucket --rate 10 --burst 20 --traffic burst --duration 10s --svg docs/sim-token-bucket.svg

# fuzz runs each fuzz target of the algorithms, then the model-based one, briefly (FUZZTIME each).
fuzz:
	@failed=""; for t in $(FUZZ); do \
		echo "fuzz $$t ($(FUZZTIME))"; \
		LIMITER_REQUIRE_REDIS=1 $(GO) test -run='^$$' -fuzz="^$$t$$" -fuzztime=$(FUZZTIME) ./algo || failed="$$failed $$t"; \
	done; \
	for t in $(FUZZROOT); do \
		echo "fuzz $$t ($(FUZZTIME))"; \
		$(GO) test -run='^$$' -fuzz="^$$t$$" -fuzztime=$(FUZZTIME) . || failed="$$failed $$t"; \
	done; \
	if [ -n "$$failed" ]; then echo "fuzz: FAILED:$$failed" >&2; exit 1; fi

# bench runs the side-by-side benchmarks of the bench module (its own go.mod, so the peers
# never reach the library's go.sum) and prints the table; the benchmarks start their own
# throw-away redis-server on a free port (BENCH_REDIS_ADDR=host:port uses another one,
# which they FLUSHALL). BENCHOUT keeps the raw output; BENCHSVG is the chart it writes.
BENCHOUT ?= bench/bench.txt
BENCHSVG ?= docs/benchmarks.svg
bench: redis-server
	cd bench && $(GO) test -run='^$$' -bench=. -benchmem -count=1 -timeout=30m . | tee $(abspath $(BENCHOUT))
	@grep -q '^ok' $(BENCHOUT) || { echo "bench: the benchmarks failed" >&2; exit 1; }
	cd bench && $(GO) run ./cmd/chart -svg $(abspath $(BENCHSVG)) < $(abspath $(BENCHOUT))

# redis-server installs Debian's redis-server when it is missing: the Redis tests start
# their own throw-away servers from it.
redis-server:
	@command -v redis-server >/dev/null 2>&1 || { \
		echo "installing redis-server"; \
		$(SUDO) apt-get update -q && $(SUDO) DEBIAN_FRONTEND=noninteractive apt-get install -y -q redis-server; }
