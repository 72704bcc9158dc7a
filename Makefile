# Entry points: `make demo` (the main job) and `make test` (every test). Each installs what is
# missing from Debian's packages, then builds.
SHELL := /bin/bash
JOBS ?= $(shell nproc)
BUILD ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 600
FUZZ_TEST_SECONDS ?= 12
PYTHON := /usr/bin/python3
DEBIAN_PACKAGES := cmake g++ make pkg-config libsimdjson-dev libfmt-dev libcli11-dev zlib1g-dev \
  libdeflate-dev libzstd-dev libgtest-dev libgmock-dev libbenchmark-dev python3-torch \
  python3-numpy python3-pytest nlohmann-json3-dev iproute2 gzip chromium clang \
  libclang-rt-14-dev

.PHONY: deps build build-asan build-fuzz fuzz test unit-test demo bench accuracy clean

deps:
	@missing=$$(for p in $(DEBIAN_PACKAGES); do \
	  dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; \
	done); \
	if [ -n "$$missing" ]; then \
	  echo "eroica: installing Debian packages:" $$missing; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi

$(BUILD)/build.ninja $(BUILD)/Makefile: CMakeLists.txt
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
	cmake --build $(BUILD) -j $(JOBS)

build-asan: deps
	@cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEROICA_SANITIZE=ON -DEROICA_BUILD_BENCH=OFF > /dev/null
	cmake --build $(ASAN_BUILD) -j $(JOBS) --target eroica_unit_tests

# The libFuzzer targets (clang, ASan/UBSan, coverage): only they and the libraries they need.
build-fuzz: deps
	@cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
	  -DEROICA_FUZZ=ON -DEROICA_BUILD_BENCH=OFF > /dev/null
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target eroica_fuzzers

# Long fuzz runs: FUZZ_SECONDS per target (tests/fuzz/run_fuzzers.sh).
fuzz: build-fuzz
	tests/fuzz/run_fuzzers.sh $(FUZZ_BUILD) $(FUZZ_SECONDS) $(JOBS)

# Every test: unit, golden, real-trace and real-PyTorch end-to-end tests, then the unit tests
# again under ASan/UBSan, then a short run of every fuzz target.
test: build build-asan build-fuzz
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 900
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --output-on-failure -j $(JOBS) -L unit --timeout 900
	tests/fuzz/run_fuzzers.sh $(FUZZ_BUILD) $(FUZZ_TEST_SECONDS) $(JOBS)

unit-test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -L unit

demo: build
	$(PYTHON) demo/run_demo.py --eroica $(BUILD)/eroica

bench: build
	$(PYTHON) bench/run_bench.py --eroica $(BUILD)/eroica --out BENCHMARKS.md

accuracy: build
	$(PYTHON) testbed/accuracy.py --eroica $(BUILD)/eroica

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
