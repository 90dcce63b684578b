# memspace: the two commands for new users are `make bench` and `make test` (README.md).
BUILD ?= build
PREFIX ?= /usr/local
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=

.PHONY: all build test bench install uninstall clean check-all deps-build deps-test deps-bench sanitize fuzz soak

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

# builds what the benchmarks run (bench_programs: the tool, the library, the workloads; the secure build's library in
# $(BUILD)/secure, measured as memspace-secure), not the tests
bench: deps-bench deps-build
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS) --target bench_programs
	@cmake -S . -B $(BUILD)/secure -DCMAKE_BUILD_TYPE=Release -DMEMSPACE_SECURE=ON -DMEMSPACE_BUILD_BENCH=OFF $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD)/secure -j $(JOBS) --target memspace
	@$(BUILD)/memspace bench all

install: build
	@cmake --install $(BUILD) --prefix $(PREFIX)

# removes what the last `make install` put in place (CMake's install_manifest.txt): the files, then the directories
# of memspace's own that are left empty (share/memspace, libexec/memspace, lib/cmake/memspace and those below
# them); shared ones (lib/pkgconfig, include, bin) stay
uninstall:
	@test -f $(BUILD)/install_manifest.txt || { echo "nothing installed from $(BUILD)"; exit 1; }
	@xargs -d '\n' rm -f < $(BUILD)/install_manifest.txt && echo "removed $$(wc -l < $(BUILD)/install_manifest.txt) files"
	@while IFS= read -r f; do d=$${f%/*}; \
	  while case $$d in */share/memspace|*/share/memspace/*|*/libexec/memspace|*/libexec/memspace/*|*/cmake/memspace|*/cmake/memspace/*) true ;; *) false ;; esac && rmdir "$$d" 2>/dev/null; do d=$${d%/*}; done; \
	done < $(BUILD)/install_manifest.txt

# What does not fit in make test's 15 minutes: every sanitizer build in full, long fuzzing, realworld suites.
check-all: deps-test build
	@MEMSPACE_CHECK_ALL=1 scripts/test.sh $(BUILD)

# Long libFuzzer runs (fuzz/, clang): FUZZ_SECONDS per target; results in $(BUILD)/fuzz/results.csv.
FUZZ_SECONDS ?= 1800
fuzz: deps-test build
	@tests/reliability/run_fuzz.sh . $(BUILD) $(FUZZ_SECONDS)

# Hours of mixed multi-threaded load with periodic checks; RSS and counts in $(BUILD)/soak.csv.
SOAK_SECONDS ?= 7200
SOAK_THREADS ?= 4
soak: build
	@$(BUILD)/soak $(SOAK_SECONDS) $(SOAK_THREADS) $(BUILD)/soak.csv

clean:
	rm -rf $(BUILD)
