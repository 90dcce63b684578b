#!/bin/sh
# check_bench_csv.py, the oracle of the bench CSVs, on made-up results: a row saying the case failed (failed,
# timeout, wrong_output) is a problem; not_installed is not; skipped only with its reason in the .cmd file; impl an
# allocator's name (reserved, memspace-PRESET, NAME-published, linux), a configuration in impl a problem.
# usage: test_check_bench_csv.sh SOURCE_DIR
check=$1/tests/install/check_bench_csv.py
d=$(mktemp -d /tmp/memspace-check-csv.XXXXXX)
trap 'rm -rf "$d"' EXIT
fail=0
: > "$d/heap.png"
try() { # WANT-EXIT NAME STATUS-ROW [CMD-LINE]
  { echo "part,case,impl,threads,size_bytes,metric,value"; echo "heap,rptest,glibc,1,0,ops_per_s,1000"; echo "$3"; } > "$d/heap.csv"
  printf 'command: memspace bench heap\ndate: 2026-01-01\nmachine: cpu=x cores=2 memory_bytes=1 kernel=6\nlibraries: glibc=2.36\n%s\n' "${4:-}" > "$d/heap.cmd"
  out=$(python3 "$check" "$d" heap 2>&1); st=$?
  if [ $st = "$1" ]; then echo "ok   $2: exit $st"; else echo "FAIL: $2: exit $st, want $1"; echo "$out"; fail=1; fi
}
try 0 "a peer not installed" "heap,rptest,jemalloc,1,0,status,not_installed"
try 1 "a failed run" "heap,rptest,mimalloc,1,0,status,failed"
try 1 "a timeout" "heap,larson,memspace,2,0,status,timeout"
try 1 "a wrong output" "heap,gcc,memspace,1,0,status,wrong_output"
try 1 "skipped without a reason" "heap,hugetlb2m,linux,1,0,status,skipped"
try 0 "skipped with its reason" "heap,hugetlb2m,linux,1,0,status,skipped" "skipped: hugetlb2m: no 2 MiB page (ENOMEM)"
try 0 "a preset, a published figure" "heap,rptest,memspace-size,1,0,ops_per_s,900
heap,rptest,seed-published,1,0,ops_per_s,800"
try 0 "a configuration in case" "heap,git/preload-floor,glibc,1,0,wall_s,0.1"
try 1 "a configuration in impl" "heap,git,preload-floor,1,0,wall_s,0.1"
try 1 "a probe in impl" "heap,auto,probe-10ms,1,0,p99_ns,100"
try 1 "a build mode as a preset" "heap,rptest,memspace-secure,1,0,ops_per_s,900"
exit $fail
