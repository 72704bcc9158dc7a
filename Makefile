# Entry points: `make demo` (the main job) and `make test` (every test). Each installs what is
# missing from Debian's packages, then builds.
SHELL := /bin/bash
JOBS ?= $(shell nproc)
BUILD ?= build
SAN_BUILD ?= build-san
FUZZ_SECONDS ?= 600
FUZZ_TEST_SECONDS ?= 8
# Unity builds (CMake joins each target's files 8 at a time): a clean build of the gcc tree took
# 405 s of CPU instead of 700 here. UNITY=OFF for quick rebuilds of one file while developing.
UNITY ?= ON
CMAKE_COMMON = -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEROICA_PYTHON=$(PYTHON) \
  -DCMAKE_UNITY_BUILD=$(UNITY) -DCMAKE_UNITY_BUILD_BATCH_SIZE=8
PYTHON := /usr/bin/python3
DEBIAN_PACKAGES := cmake g++ make pkg-config libsimdjson-dev libfmt-dev libcli11-dev zlib1g-dev \
  libdeflate-dev libisal-dev libzstd-dev libgtest-dev libgmock-dev libbenchmark-dev python3-torch python3-dev \
  python3-numpy python3-pytest nlohmann-json3-dev iproute2 gzip chromium clang-tidy clang-format clang libclang-rt-14-dev \
  dpkg-dev fakeroot lintian help2man man-db systemd python3-build python3-wheel python3-setuptools \
  python3-venv python3-pip util-linux python3-yaml
# npm only where Debian has no such tool: a Dockerfile linter (no hadolint in Debian 12), and
# the Kubernetes API's schemas with a validator for deploy/ (Debian 12 packages neither, nor
# kubeconform): kubernetes-models' validators and ajv for the vendored PyTorchJob schema. npm
# itself comes from Debian unless a Node.js is already installed (it brings its own npm).
NPM_PACKAGES := dockerfilelint@1.8.0 kubernetes-models@5.1.0 ajv@8.20.0

.PHONY: deps build build-san test unit-test demo bench accuracy package tidy format fuzz clean

deps:
	@missing=$$(for p in $(DEBIAN_PACKAGES); do \
	  dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; \
	done); \
	if [ -n "$$missing" ]; then \
	  echo "eroica: installing Debian packages:" $$missing; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi
	@command -v npm > /dev/null || { SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq npm; }
	@for p in $(NPM_PACKAGES); do \
	  [ "$$(npm ls -g --depth=0 --parseable $${p%@*} 2>/dev/null)" ] || { \
	    echo "eroica: installing npm package $$p"; \
	    $$( [ "$$(id -u)" = 0 ] || echo sudo ) npm install -g --no-fund --no-audit --silent $$p; }; \
	done
	@# kubectl renders deploy/'s kustomizations; Debian 12's (1.20) has a kustomize too old for them.
	@command -v kubectl > /dev/null || echo "eroica: no kubectl (1.27+): the deploy_manifests test will fail"

$(BUILD)/build.ninja $(BUILD)/Makefile: CMakeLists.txt
	cmake -S . -B $(BUILD) $(CMAKE_COMMON)

# `make test` builds the gcc tree without the unit tests, which it runs in the sanitizer tree:
# a clean gcc build took 207 s of CPU without them, 405 s with (here, 2 cores).
MAIN_UNIT_TESTS ?= ON
test: MAIN_UNIT_TESTS = OFF

build: deps
	@cmake -S . -B $(BUILD) $(CMAKE_COMMON) -DEROICA_UNIT_TESTS=$(MAIN_UNIT_TESTS) > /dev/null
	cmake --build $(BUILD) -j $(JOBS)

# One clang tree with ASan/UBSan and libFuzzer's coverage for both the sanitized unit tests and
# the fuzz targets: the libraries are compiled once for both, and nothing else is built there.
build-san: deps
	@cmake -S . -B $(SAN_BUILD) $(CMAKE_COMMON) -DCMAKE_CXX_COMPILER=clang++ \
	  -DEROICA_FUZZ=ON -DEROICA_BUILD_BENCH=OFF > /dev/null
	cmake --build $(SAN_BUILD) -j $(JOBS) --target eroica_unit_tests eroica_fuzzers

# Long fuzz runs: FUZZ_SECONDS per target (tests/fuzz/run_fuzzers.sh).
fuzz: build-san
	tests/fuzz/run_fuzzers.sh $(SAN_BUILD) $(FUZZ_SECONDS) $(JOBS)

# Every test: golden, real-trace and real-PyTorch end-to-end tests (with the sanitizer tree
# building beside them at idle priority), then the unit tests under ASan/UBSan, then a short run
# of every fuzz target (tests/run_suite.sh).
test: build
	BUILD=$(BUILD) SAN_BUILD=$(SAN_BUILD) JOBS=$(JOBS) FUZZ_TEST_SECONDS=$(FUZZ_TEST_SECONDS) \
	  MAKE="$(MAKE)" tests/run_suite.sh

unit-test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -L unit

demo: build
	$(PYTHON) demo/run_demo.py --eroica $(BUILD)/eroica

bench: build
	$(PYTHON) bench/run_bench.py --eroica $(BUILD)/eroica --out BENCHMARKS.md

# The fault library's splits (testbed/splits.py; ~7 + ~7 + ~7 min):
# thresholds are tuned on the first; validation and the 3- and 5-rank probe are only reported.
accuracy: build
	$(PYTHON) testbed/accuracy.py --eroica $(BUILD)/eroica --split tuning --out out/accuracy-tuning
	$(PYTHON) testbed/accuracy.py --eroica $(BUILD)/eroica --split validation --out out/accuracy-validation
	$(PYTHON) testbed/accuracy.py --eroica $(BUILD)/eroica --split probe --out out/accuracy-probe
	$(PYTHON) testbed/accuracy.py --eroica $(BUILD)/eroica --split edge --out out/accuracy-edge
	$(PYTHON) testbed/accuracy.py --eroica $(BUILD)/eroica --split cnn --out out/accuracy-cnn

# clang-tidy over every source (make test checks the recently changed ones); format rewrites
# every C++ file in clang-format's layout.
tidy: build
	$(PYTHON) tests/style/tidy.py $(BUILD) --jobs $(JOBS)

format:
	git ls-files '*.cc' '*.h' | xargs clang-format -i

# The Debian package, the wheel and the agent image's build context, from the build tree as it
# is (README "Install" says what each holds). Then: `docker build -t eroica-agent $(BUILD)/package`.
package: build
	rm -rf $(BUILD)/package && mkdir -p $(BUILD)/package
	mkdir -p $(BUILD)/cpack && cd $(BUILD) && cpack -G DEB -B cpack > cpack/cpack.log 2>&1 || { cat cpack/cpack.log; exit 1; }
	cp $(BUILD)/cpack/eroica_*_amd64.deb packaging/Dockerfile $(BUILD)/package/
	packaging/build_wheel.sh $(BUILD)/package > /dev/null
	@ls -l $(BUILD)/package

clean:
	rm -rf $(BUILD) $(SAN_BUILD)
