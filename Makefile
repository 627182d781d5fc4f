# trainyard: top-level entry points. Each target installs missing Debian packages first
# (scripts/install-deps.sh), then builds with meson/ninja.
#
#   make         build (build/)
#   make test    build, then run every test: unit + integration, again under
#                AddressSanitizer + UBSan, and short libFuzzer runs; ends "N passed, N failed"
#   make demo    build, then run examples/digits as a distributed job through `local train`
#   make demo-tuning  build, then tune examples/digits (8 trials, 2 at a time) through
#                `local train`; ends with the table of trials, best first
#   make demo-dashboard  build, then start trainyardd with a few finished jobs of the digits
#                example and a tuning study, and print the web dashboard's address (Ctrl-C stops it)
#   make bench   run the benchmarks in bench/ (ratios against a baseline, not pass/fail); ends
#                with one table of every figure, its floor, ratio, goal and whether it is met
#   make fuzz-long  every libFuzzer target for FUZZ_LONG_SECONDS (600) under ASan + UBSan, one
#                after the other; fails on any crash; merges coverage-adding inputs into
#                fuzz/corpus/<target>/ (commit them)

BUILD ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 10
FUZZ_LONG_SECONDS ?= 600

.PHONY: all deps build test demo demo-tuning demo-dashboard bench fuzz-long clean format

all: build

deps:
	@scripts/install-deps.sh

$(BUILD)/build.ninja: | deps
	meson setup $(BUILD)

build: deps $(BUILD)/build.ninja
	ninja -C $(BUILD)

test: build
	@scripts/run-tests.sh --build $(BUILD) --asan-build $(ASAN_BUILD) \
	    --fuzz-build $(FUZZ_BUILD) --fuzz-seconds $(FUZZ_SECONDS)

fuzz-long: deps
	@scripts/fuzz-long.sh --fuzz-build $(FUZZ_BUILD) --seconds $(FUZZ_LONG_SECONDS)

demo: build
	@examples/digits/demo.sh $(BUILD)

demo-tuning: build
	@examples/digits/demo-tuning.sh $(BUILD)

demo-dashboard: build
	@examples/digits/demo-dashboard.sh $(BUILD)

# Each benchmark writes its figures to $(BENCH_RESULTS) (JSON lines, bench/report.py); one that
# fails is recorded and the others still run; the table of every figure ends the output, and
# `make bench` fails only when a benchmark failed (never on a goal: machines are noisy).
BENCH_RESULTS ?= $(BUILD)/bench-results.jsonl
BENCH = bench/report.py run
CONTAINERS_OK = [ "$$(id -u)" -eq 0 ] && scripts/setup-podman.sh >/dev/null 2>&1
bench: export TY_BENCH_RESULTS = $(abspath $(BENCH_RESULTS))
bench: build
	@: >$(BENCH_RESULTS)
	@$(BENCH) launch bench/launch/run.sh $(BUILD)
	@if $(CONTAINERS_OK); then $(BENCH) launch-containers bench/launch-containers/run.sh $(BUILD); \
	else bench/report.py skip launch-containers "no usable container engine"; fi
	@$(BENCH) launch-slurm bench/launch-slurm/run.sh $(BUILD)
	@$(BENCH) api bench/api/run.sh $(BUILD)
	@$(BENCH) jobfilter bench/jobfilter/run.sh $(BUILD)
	@$(BENCH) logs bench/logs/run.sh $(BUILD)
	@$(BENCH) sched bench/sched/run.sh $(BUILD)
	@$(BENCH) "sched service" python3 bench/sched/service.py $(BUILD)
	@$(BENCH) tuning-overhead bench/tuning-overhead/run.sh $(BUILD)
	@$(BENCH) restart bench/restart/run.sh $(BUILD)
	@if $(CONTAINERS_OK); then $(BENCH) restart-containers bench/restart-containers/run.sh $(BUILD); \
	else bench/report.py skip restart-containers "no usable container engine"; fi
	@if $(CONTAINERS_OK); then $(BENCH) container-exit bench/container-exit/run.sh $(BUILD); \
	else bench/report.py skip container-exit "no usable container engine"; fi
	@$(BENCH) faults bench/faults/run.sh $(BUILD)
	@$(BENCH) load bench/load/run.sh $(BUILD)
	@$(BENCH) dashboard bench/dashboard/run.sh $(BUILD)
	@$(BENCH) scale bench/scale/run.sh $(BUILD)
	@bench/report.py table $(BENCH_RESULTS)

format:
	clang-format -i $$(git ls-files 'src/*.c' 'src/*.h' 'tests/*.c' 'tests/*.h' 'fuzz/*.c' 'bench/*.c' 'examples/*.c' 'examples/*.h')

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
