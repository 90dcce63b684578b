#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/compare.sh REV_A REV_B [ROUNDS]: the library of two revisions side by side (bench/README.md).
# Builds each revision (git archive) in build/compare/build-SHA, then runs ROUNDS (default 5, at least 5)
# interleaved rounds, each benchmark A then B within a round:
#   heap    the seed workload's long window: build/bench/heap_rptest (REV_B's program, so both run the same
#           workload) at 1 and 2 threads, 30 loops from an empty heap, LD_PRELOAD of each revision's libmemspace.so
#   spaces  the spaces latency workload: each revision's spaces_work_space (linked with its library), default
#           size: mixed-workload malloc/free mean, p50, p99 and the geometric mean over sizes of the FIFO p50
#   spill   the spill fill: bench/spill/seed.py (1 GiB of doubles, allocated and written, then random reads and
#           writes) with MEMSPACE_SPILL_THRESHOLD=64M, LD_PRELOAD of each revision's libmemspace.so
# Every run is wrapped in /usr/bin/time for its minor page faults (metric minor_faults). After the rounds, once per
# revision, the instructions the heap workload executes at a small size (valgrind --tool=cachegrind, I refs: no
# noise from the machine's load): rptest 1 thread, 10 loops of 20000 slots and 20000 operations.
# Writes bench/results/compare.csv (part,case,impl,threads,size_bytes,metric,value; case is CASE/a or CASE/b,
# impl memspace, the n-th row of a case/threads/metric is round n) and compare.cmd (the revisions and the exact commands, then the
# summary), then prints per figure the medians of A and B, B/A of the medians and the range of B/A over the
# rounds, and A's own spread (max/min of its rounds: the noise). Each run takes the machine lock (flock /tmp/memspace-bench.lock).
set -euo pipefail
[ $# -ge 2 ] || { sed -n '3,18p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=${3:-5}
[ "$ROUNDS" -ge 5 ] 2>/dev/null || { echo "compare.sh: ROUNDS must be a number, at least 5" >&2; exit 2; }
A=$(git -C "$root" rev-parse --short=10 "$1^{commit}")
B=$(git -C "$root" rev-parse --short=10 "$2^{commit}")
out=$root/build/compare
results=${COMPARE_RESULTS:-$root/bench/results}
csv=$results/compare.csv
cmdf=$results/compare.cmd
spill_dir=${MEMSPACE_SPILL_DIR:-/var/tmp}
py=/usr/bin/python3
[ -x "$py" ] || py=python3
mkdir -p "$out" "$results"

build() { # REV: sources in build/compare/src-REV, build in build/compare/build-REV
  local rev=$1 src=$out/src-$1 bld=$out/build-$1
  if [ ! -d "$src" ]; then
    mkdir -p "$src.tmp" && git -C "$root" archive "$rev" | tar -x -C "$src.tmp" && mv "$src.tmp" "$src"
  fi
  cmake -S "$src" -B "$bld" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$bld" -j2 --target memspace spaces_work_space heap_rptest >/dev/null
}
echo "compare.sh: building $A and $B in $out" >&2
build "$A"
build "$B"

rptest=$out/build-$B/bench/heap_rptest
seed=$out/src-$B/bench/spill/seed.py
spill_bytes=$((1 << 30))
spill_accesses=2000000
heap_cmd() { # REV THREADS
  echo "LD_PRELOAD=$out/build-$1/libmemspace.so $rptest --threads $2 --warmup 0 --loops 30 --blocks 150000" \
       "--ops 75000 --min 16 --max 16000 --idle-ms 0"
}
instr_cmd() {
  echo "LD_PRELOAD=$out/build-$1/libmemspace.so valgrind --tool=cachegrind --cache-sim=no" \
       "--cachegrind-out-file=/dev/null $rptest --threads 1 --warmup 0 --loops 10 --blocks 20000 --ops 20000" \
       "--min 16 --max 16000 --idle-ms 0"
}
spaces_cmd() { echo "$out/build-$1/spaces_work_space"; }
spill_cmd() {
  echo "LD_PRELOAD=$out/build-$1/libmemspace.so MEMSPACE_SPILL_THRESHOLD=64M MEMSPACE_SPILL_DIR=$spill_dir" \
       "$py $seed $spill_bytes $spill_accesses"
}
tf=$(mktemp)
trap 'rm -f "$tf"' EXIT
# a command line as written to .cmd, under the machine lock, its minor faults in $tf
run() { flock -w 900 /tmp/memspace-bench.lock /usr/bin/time -o "$tf" -f %R env $1; }
faults() { row "$1" "$2" "$3" "$4" "$5" minor_faults "$(tail -1 "$tf")"; }

{
  echo "# bench/compare.sh $1 $2 $ROUNDS ($(date -u '+%Y-%m-%d %H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg))"
  echo "A = $A: $(git -C "$root" log -1 --format=%s "$A" | cut -c1-100)"
  echo "B = $B: $(git -C "$root" log -1 --format=%s "$B" | cut -c1-100)"
  echo "rounds: $ROUNDS, interleaved: within a round each command runs for A, then for B;" \
       "each under flock -w 900 /tmp/memspace-bench.lock /usr/bin/time -o FILE -f %R env ..."
  for r in A B; do
    rev=$A; [ $r = B ] && rev=$B
    echo "$r heap (threads 1, 2): $(heap_cmd "$rev" 'T')"
    echo "$r spaces: $(spaces_cmd "$rev")"
    echo "$r spill: $(spill_cmd "$rev")"
    echo "$r instructions: $(instr_cmd "$rev")"
  done
} >"$cmdf"
echo "part,case,impl,threads,size_bytes,metric,value" >"$csv"

row() { echo "$1,$2/${3,,},memspace,$4,$5,$6,$7" >>"$csv"; } # the revision in case: docs/contract.md §2
for ((round = 1; round <= ROUNDS; round++)); do
  echo "compare.sh: round $round/$ROUNDS (load average $(cut -d' ' -f1-3 /proc/loadavg))" >&2
  for t in 1 2; do
    for r in A B; do
      rev=$A; [ $r = B ] && rev=$B
      o=$(run "$(heap_cmd "$rev" "$t")")
      for m in ops_per_cpu_s ops_per_s peak_rss_bytes overhead_bytes; do
        row heap rptest_long "$r" "$t" 0 "$m" "$(awk -v m=$m '$1 == m {print $2}' <<<"$o")"
      done
      faults heap rptest_long "$r" "$t" 0
    done
  done
  for r in A B; do
    rev=$A; [ $r = B ] && rev=$B
    o=$(run "$(spaces_cmd "$rev")")
    awk -v r=${r,,} '
      $1 == "mixed" { printf "spaces,mixed_%s/%s,memspace,1,0,mean_ns,%s\nspaces,mixed_%s/%s,memspace,1,0,p50_ns,%s\nspaces,mixed_%s/%s,memspace,1,0,p99_ns,%s\n",
                      $2, r, $3, $2, r, $4, $2, r, $5 }
      $1 == "size" && $2 == "fifo" { n[$4]++; s[$4] += log($6 > 0.1 ? $6 : 0.1) }
      END { for (op in n) printf "spaces,sizes_fifo_%s/%s,memspace,1,0,geomean_p50_ns,%.2f\n", op, r, exp(s[op] / n[op]) }
    ' <<<"$o" >>"$csv"
    faults spaces spaces_work "$r" 1 0
  done
  for r in A B; do
    rev=$A; [ $r = B ] && rev=$B
    o=$(run "$(spill_cmd "$rev")")
    for m in alloc_s read_ops_per_s write_ops_per_s; do
      row spill spill_fill "$r" 1 "$spill_bytes" "$m" "$(tr ' ' '\n' <<<"$o" | awk -F= -v m=$m '$1 == m {print $2}')"
    done
    faults spill spill_fill "$r" 1 "$spill_bytes"
  done
done
if command -v valgrind >/dev/null; then
  for r in A B; do
    rev=$A; [ $r = B ] && rev=$B
    o=$(env $(instr_cmd "$rev") 2>&1 >/dev/null)
    row heap rptest_small "$r" 1 0 instructions "$(awk '/I *refs:/ {gsub(",", "", $NF); print $NF}' <<<"$o")"
  done
fi

"$py" - "$csv" <<'EOF' | tee -a "$cmdf"
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
print("summary (B/A of the medians; the range of B/A over the rounds; A's spread: max/min of its rounds):")
keys = []
series = {}
for r in rows:
    case, _, rev = r["case"].rpartition("/")  # CASE/a, CASE/b
    k = (r["part"], case, r["threads"], r["metric"])
    if k not in keys:
        keys.append(k)
    try:
        series.setdefault(k + (rev.upper(),), []).append(float(r["value"]))
    except ValueError:
        pass
print("%-6s %-18s %2s %-16s %14s %14s %7s %17s %9s  %s" % ("part", "case", "t", "metric", "A median", "B median",
                                                           "B/A", "B/A range", "A spread", "better"))
for k in keys:
    a, b = series.get(k + ("A",), []), series.get(k + ("B",), [])
    if not a or not b:
        print("%-6s %-18s %2s %-16s  missing" % k)
        continue
    ma, mb = statistics.median(a), statistics.median(b)
    per = [y / x for x, y in zip(a, b) if x]
    spread = max(a) / min(a) if min(a) > 0 else float("nan")
    better = "higher" if "ops" in k[3] else "lower"
    print("%-6s %-18s %2s %-16s %14.6g %14.6g %7.3f %8.3f-%-8.3f %9.3f  %s" % (
        k + (ma, mb, mb / ma if ma else float("nan"), min(per), max(per), spread, better)))
EOF
echo "compare.sh: raw rows in $csv, commands in $cmdf" >&2
