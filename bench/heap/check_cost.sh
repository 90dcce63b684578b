#!/usr/bin/env bash
# check_cost.sh: what the default build's free-list checks cost (issue #25: at most 3%, instructions and time).
# The library of this tree (checks on, as shipped) against the same source built with -DMSI_HEAP_LIST_CHECKS=0
# (src/heap/heap.h: plain links and an address cookie, no check on the pop; for this measurement only), and with
# --ref REF also against that git ref's library (e.g. main), on the seed's workload (rptest: 1 thread, 16-16,000 B
# and 16-256 B, the parameters of `memspace bench heap`'s default short window) and two real programs (python3:
# dict/list churn with PYTHONMALLOC=malloc, so its objects come from malloc rather than Python's own pools;
# sqlite3: an in-memory table of 100,000 rows, indexed and queried), each preloaded.
#   instructions: valgrind --tool=cachegrind, the whole program, one run per library (ASLR and the hash seed are
#                 fixed, so repeated runs differ by a few thousand instructions)
#   time:         wall and CPU (user + sys) seconds of --runs interleaved runs per library (default 5), under the
#                 bench lock (/tmp/memspace-bench.lock)
# Output: bench/results/check_cost.csv (part,case,impl,threads,size_bytes,metric,value; case is WORKLOAD/BUILD,
# BUILD checked, unchecked or ref-REF, impl memspace) and bench/results/check_cost.cmd (the commands), and a summary on stdout.
# Usage: bench/heap/check_cost.sh [--ref REF] [--runs N] [--no-time] [--work DIR] [--out DIR]
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
ref="" runs=5 do_time=1 work=/tmp/memspace-check-cost out="$src/bench/results"
while [ $# -gt 0 ]; do
  case $1 in
    --ref) ref=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --no-time) do_time=0; shift ;;
    --work) work=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) sed -n '2,15p' "$0"; exit 1 ;;
  esac
done
for t in valgrind sqlite3 setarch bc; do
  command -v "$t" >/dev/null || { echo "check_cost: $t is not installed"; exit 1; }
done
python=$(python3 -c 'import sys; print(sys.executable)') # the interpreter itself, not a shim script
mkdir -p "$work" "$out"

build() { # srcdir builddir [C flags]
  cmake -S "$1" -B "$2" -DCMAKE_BUILD_TYPE=Release ${3:+"-DCMAKE_C_FLAGS=$3"} >/dev/null
  cmake --build "$2" -j2 --target memspace heap_rptest >/dev/null
}
echo "building: checked, unchecked${ref:+, $ref}"
build "$src" "$work/checked"
build "$src" "$work/unchecked" -DMSI_HEAP_LIST_CHECKS=0
impls="checked unchecked"
if [ -n "$ref" ]; then
  rm -rf "$work/ref-src" && mkdir -p "$work/ref-src"
  git -C "$src" archive "$ref" | tar -x -C "$work/ref-src"
  build "$work/ref-src" "$work/ref"
  impls="$impls ref"
fi
lib() { echo "$work/$1/libmemspace.so"; }
rptest="$work/checked/bench/heap_rptest" # the workload program, the same binary for every library

# the workloads: name and command (run with the library preloaded)
cat >"$work/churn.py" <<'EOF'
d = {}
for i in range(100000):
    d["k%d" % i] = [i, str(i), (i, i + 1)]
for i in range(0, 100000, 2):
    del d["k%d" % i]
rows = [tuple(range(i % 12)) for i in range(100000)]
s = sorted(d.items(), key=lambda kv: len(kv[1][1]))
print(len(d), len(rows), len(s))
EOF
cat >"$work/sql.sql" <<'EOF'
CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, v REAL);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 100000)
INSERT INTO t SELECT x, 'name' || (x * 7919 % 100003), x * 0.5 FROM c;
CREATE INDEX t_name ON t(name);
SELECT count(*), sum(v) FROM t WHERE name LIKE 'name1%';
SELECT name, count(*) FROM t GROUP BY substr(name, 1, 7) ORDER BY 2 DESC LIMIT 3;
EOF
rp="--threads 1 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --idle-ms 0"
cases=(rptest_16_16000 rptest_16_256 python_churn sqlite3)
declare -A cmd=(
  [rptest_16_16000]="$rptest $rp --min 16 --max 16000"
  [rptest_16_256]="$rptest $rp --min 16 --max 256"
  [python_churn]="$python $work/churn.py"
  [sqlite3]="sqlite3 :memory: -init $work/sql.sql .quit"
)
export PYTHONHASHSEED=0 PYTHONMALLOC=malloc

csv="$out/check_cost.csv"
{
  echo "command: bench/heap/check_cost.sh${ref:+ --ref $ref} --runs $runs$([ $do_time = 1 ] || echo ' --no-time')"
  echo "source: $(git -C "$src" rev-parse HEAD)$(git -C "$src" diff --quiet HEAD -- src || echo ' (with uncommitted changes in src)')"
  [ -n "$ref" ] && echo "ref: $ref = $(git -C "$src" rev-parse "$ref")"
  echo "checked: $(lib checked); unchecked: $(lib unchecked) (-DCMAKE_C_FLAGS=-DMSI_HEAP_LIST_CHECKS=0)"
  echo "instructions: setarch -R env LD_PRELOAD=LIB valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=FILE CMD"
  echo "time: flock /tmp/memspace-bench.lock bash -c 'TIMEFORMAT=\"%3R %3U %3S\"; time setarch -R env LD_PRELOAD=LIB CMD', $runs interleaved runs"
  echo "PYTHONHASHSEED=0 PYTHONMALLOC=malloc"
  for c in "${cases[@]}"; do echo "$c: ${cmd[$c]}"; done
} >"$out/check_cost.cmd"
echo "part,case,impl,threads,size_bytes,metric,value" >"$csv"
row() { echo "check_cost,$1/$2,memspace,1,0,$3,$4" >>"$csv"; } # the build in case: docs/contract.md §2
name() { [ "$1" = ref ] && echo "ref-$ref" || echo "$1"; }

# instructions
declare -A ir
for c in "${cases[@]}"; do
  for i in $impls; do
    f="$work/cg.$c.$i"
    # shellcheck disable=SC2086
    setarch -R env LD_PRELOAD="$(lib "$i")" valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file="$f" \
      ${cmd[$c]} >/dev/null 2>"$f.err" || { echo "$c $i failed: $(tail -3 "$f.err")"; exit 1; }
    ir[$c.$i]=$(sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$f")
    row "$c" "$(name "$i")" instructions "${ir[$c.$i]}"
  done
  printf '%-16s instructions: checked %s, unchecked %s: %+.2f%%' "$c" "${ir[$c.checked]}" "${ir[$c.unchecked]}" \
    "$(echo "(${ir[$c.checked]} / ${ir[$c.unchecked]} - 1) * 100" | bc -l)"
  [ -n "$ref" ] && printf '; %s %s: %+.2f%% against unchecked' "$ref" "${ir[$c.ref]}" \
    "$(echo "(${ir[$c.ref]} / ${ir[$c.unchecked]} - 1) * 100" | bc -l)"
  echo
done

# time: interleaved runs (every library once per round), medians printed
if [ "$do_time" = 1 ]; then
  declare -A cpu wall
  for r in $(seq 1 "$runs"); do
    for c in "${cases[@]}"; do
      for i in $impls; do
        # shellcheck disable=SC2086
        t=$(flock /tmp/memspace-bench.lock bash -c 'TIMEFORMAT="%3R %3U %3S"; time setarch -R env LD_PRELOAD="$0" "$@" \
              >/dev/null 2>&1' "$(lib "$i")" ${cmd[$c]} 2>&1 | tail -1)
        read -r w u s <<<"$t"
        row "$c" "$(name "$i")" wall_s "$w"
        row "$c" "$(name "$i")" cpu_s "$(echo "$u + $s" | bc -l)"
        cpu[$c.$i]="${cpu[$c.$i]:-} $(echo "$u + $s" | bc -l)"
        wall[$c.$i]="${wall[$c.$i]:-} $w"
      done
    done
  done
  med() { tr ' ' '\n' | grep . | sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
  for c in "${cases[@]}"; do
    a=$(echo "${cpu[$c.checked]}" | med) b=$(echo "${cpu[$c.unchecked]}" | med)
    x=$(echo "${wall[$c.checked]}" | med) y=$(echo "${wall[$c.unchecked]}" | med)
    printf '%-16s median of %d: cpu %ss vs %ss (%+.1f%%), wall %ss vs %ss (%+.1f%%)\n' "$c" "$runs" "$a" "$b" \
      "$(echo "($a / $b - 1) * 100" | bc -l)" "$x" "$y" "$(echo "($x / $y - 1) * 100" | bc -l)"
  done
fi
echo "wrote $csv and $out/check_cost.cmd"
