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
#   make bench   run the benchmarks in bench/ (ratios against a baseline, not pass/fail)
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

bench: build
	@bench/launch/run.sh $(BUILD)
	@if [ "$$(id -u)" -eq 0 ] && scripts/setup-podman.sh >/dev/null 2>&1; then \
	    bench/launch-containers/run.sh $(BUILD); \
	else echo "bench/launch-containers: skipped (no usable container engine)"; fi
	@bench/launch-slurm/run.sh $(BUILD)
	@bench/api/run.sh $(BUILD)
	@bench/jobfilter/run.sh $(BUILD)
	@bench/sched/run.sh $(BUILD)
	@python3 bench/sched/service.py $(BUILD)
	@bench/restart/run.sh $(BUILD)
	@if [ "$$(id -u)" -eq 0 ] && scripts/setup-podman.sh >/dev/null 2>&1; then \
	    bench/restart-containers/run.sh $(BUILD); \
	else echo "bench/restart-containers: skipped (no usable container engine)"; fi
	@bench/faults/run.sh $(BUILD)
	@bench/load/run.sh $(BUILD)
	@bench/dashboard/run.sh $(BUILD)
	@bench/scale/run.sh $(BUILD)

format:
	clang-format -i $$(git ls-files 'src/*.c' 'src/*.h' 'tests/*.c' 'tests/*.h' 'fuzz/*.c' 'bench/*.c' 'examples/*.c' 'examples/*.h')

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
