# memspace: the two commands for new users are `make bench` and `make test` (README.md).
BUILD ?= build
PREFIX ?= /usr/local
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=

.PHONY: all build test bench install clean check-all deps-build deps-test deps-bench sanitize fuzz soak

all: build

deps-build:
	@scripts/deps.sh build
deps-test:
	@scripts/deps.sh test
deps-bench:
	@scripts/deps.sh bench

build: deps-build
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

# Every test: the release build's suite, then the sanitizer builds' unit tests (ms_* API without override).
test: deps-test build
	@scripts/test.sh $(BUILD)

bench: deps-bench build
	@$(BUILD)/memspace bench all

install: build
	@cmake --install $(BUILD) --prefix $(PREFIX)

# What does not fit in make test's 15 minutes: every sanitizer build in full, long fuzzing, realworld suites.
check-all: deps-test build
	@MEMSPACE_CHECK_ALL=1 scripts/test.sh $(BUILD)

clean:
	rm -rf $(BUILD)
