#!/usr/bin/env bash
# Real programs' own test suites under `memspace run`, compared with the same run under glibc.
# Usage: realworld.sh python|tools short|full BUILD_DIR
#   python: CPython's regression tests (python3 -m test, PYTHONMALLOC=malloc so objects go through malloc)
#   tools:  sqlite3 (PRAGMA integrity_check), git (git fsck on a generated repository), gcc (compile and run)
# Modes: glibc (no preload), heap (default heap), space (one fixed deterministic space holds the process),
# spill (blocks from 128 KiB up are file-backed: at 64 KiB CPython spills a start-up block whose descriptor
# shows in test_subprocess's fd checks, see docs/reliability.md). Each memspace mode must give the glibc mode's results.
# The space (2 GiB for python, run in one process; 512 MiB for each tool process) is not inherited by children.
# Results: BUILD/realworld/results.csv (suite,mode,item,result). Exit 77 when the suite is not installed (exit 1
# under CI=true: tests/common/ms_test.sh).
set -u
. "$(dirname "$0")/../common/ms_test.sh"
what=${1:-python}
size=${2:-short}
build=$(cd "${3:-build}" && pwd)
tool="$build/memspace"
py=/usr/bin/python3   # Debian's python, whose test package is libpython3.11-testsuite
out="$build/realworld" # (python's files named by size too: the short and the full suite may run at once)
mkdir -p "$out"
csv="$out/results.csv"
[ -f "$csv" ] || echo "suite,mode,item,result" > "$csv"
work=$(mktemp -d /tmp/memspace-realworld.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/spill"
modes="glibc heap space spill"
[ -n "${REALWORLD_MODES:-}" ] && modes=$REALWORLD_MODES

runner() {  # mode -> command prefix
  case $1 in
    glibc) echo "env" ;;
    heap)  echo "$tool run --" ;;
    space) echo "$tool run --space-initial ${SPACE_SIZE:-512M} --space-expand 0 --space-at firstalloc --" ;;
    spill) echo "$tool run --spill-threshold 128K --spill-dir $work/spill --" ;;
  esac
}

# is the mode in effect? A python that allocates big and small blocks, with statistics printed at exit
mode_active() {  # mode
  local st
  case $1 in
    space) st=$(MEMSPACE_SHOW_STATS=1 $(runner space) $py -c "x=[bytearray(1000) for i in range(1000)]" 2>&1)
           echo "$st" | sed -n '/^\[spaces\]/,/^\[/p' | grep -qE "^ +used +[1-9]" ;;
    spill) st=$(MEMSPACE_SHOW_STATS=1 $(runner spill) $py -c "x=[bytearray(200000) for i in range(5)]" 2>&1)
           echo "$st" | grep -qE "spill_blocks +[1-9]" ;;
    *) return 0 ;;
  esac || { echo "FAIL: mode $1 is not in effect (statistics below)"; echo "$st" | head -40; return 1; }
}

status=0
for m in $modes; do mode_active "$m" || status=1; done
if [ "$what" = python ]; then
  if ! $py -c "import test.libregrtest" 2>/dev/null || [ ! -f /usr/lib/python3*/test/test_dict.py ]; then
    ms_skip_missing "CPython's test package (Debian package libpython3.11-testsuite)"
  fi
  short="test_dict test_list test_set test_json test_re test_bytes test_gc test_collections test_array test_mmap"
  full="test_dict test_list test_set test_json test_re test_unicode test_bytes test_gc test_threading
        test_collections test_itertools test_pickle test_array test_mmap test_subprocess test_userdict
        test_string test_struct test_tuple test_deque test_heapq test_bisect test_weakref test_zlib test_hashlib"
  mods=$short
  [ "$size" = full ] && mods=$full
  for m in $modes; do
    log="$out/python-$size-$m.log"
    start=$(date +%s)
    # the space is the process's own (children do not inherit it): run the tests in one process there
    jobs=-j2
    [ "$m" = space ] && jobs=""
    ( cd "$work" && PYTHONMALLOC=malloc SPACE_SIZE=2G $(SPACE_SIZE=2G runner "$m") $py -m test $jobs --timeout 900 $mods ) >"$log" 2>&1
    rc=$?
    secs=$(( $(date +%s) - start ))
    # one line per module from regrtest's summary ("N tests failed:" and the names under it...): passed
    # unless named under a heading; no summary at all (a crash) makes every module "crashed"
    $py - "$log" $mods > "$out/python-$size-$m.results" <<'PY'
import re, sys
text = open(sys.argv[1], errors="replace").read().splitlines()
state, heading = {}, None
summary = any(l.startswith("== Tests result") for l in text)
for line in text:
    h = re.match(r"^(\d+) (?:tests?|re-run tests?) ([a-z ()-]+):$", line)
    if h:
        heading = h.group(2).replace(" ", "_")
        continue
    if heading and line.startswith("    "):
        for name in line.split():
            state[name] = heading
        continue
    heading = None
for mod in sys.argv[2:]:
    print(mod, state.get(mod, "passed") if summary else "crashed")
PY
    n=$(wc -l < "$out/python-$size-$m.results")
    echo "python $m: exit $rc, $n modules in ${secs}s: $(grep -c ' passed$' "$out/python-$size-$m.results") passed"
    while read -r mod res; do echo "python,$m,$mod,$res" >> "$csv"; done < "$out/python-$size-$m.results"
    if [ "$m" != glibc ] && ! cmp -s "$out/python-$size-glibc.results" "$out/python-$size-$m.results"; then
      echo "FAIL: python under $m differs from glibc:"
      diff "$out/python-$size-glibc.results" "$out/python-$size-$m.results"
      tail -30 "$log"; status=1
    fi
    [ "$m" = glibc ] && [ "$rc" != 0 ] && echo "note: python's tests fail under glibc too (exit $rc)"
  done
  exit $status
fi

# ---- tools: sqlite3, git, gcc ----
for t in sqlite3 git gcc; do command -v $t >/dev/null || ms_skip_missing "$t (Debian package $t)"; done
rows=20000
[ "$size" = full ] && rows=200000
cat > "$work/prog.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static int cmp(const void *a, const void *b) { return *(const unsigned *)a < *(const unsigned *)b ? -1 : *(const unsigned *)a > *(const unsigned *)b; }
int main(void) {
  unsigned n = 300000, h = 2166136261u, x = 1;
  unsigned *v = malloc(n * sizeof *v);
  char **s = malloc(n * sizeof *s);
  for (unsigned i = 0; i < n; i++) { x = x * 1103515245u + 12345u; v[i] = x; s[i] = malloc(x % 100 + 1); memset(s[i], 'a' + x % 26, x % 100); s[i][x % 100] = 0; }
  qsort(v, n, sizeof *v, cmp);
  for (unsigned i = 0; i < n; i++) { h = (h ^ v[i]) * 16777619u; h = (h ^ (unsigned)strlen(s[i])) * 16777619u; free(s[i]); }
  free(s); free(v);
  printf("%u %u\n", n, h);
  return 0;
}
C
for m in $modes; do
  r=$(runner "$m")
  d="$work/$m"
  mkdir -p "$d"
  # sqlite3: a table, an index, updates, deletes, vacuum, integrity check, a checksum query
  sq=$(cd "$d" && $r sqlite3 db.sqlite <<SQL 2>&1
PRAGMA journal_mode=WAL;
CREATE TABLE t(id INTEGER PRIMARY KEY, a TEXT, b INTEGER);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x < $rows)
  INSERT INTO t SELECT x, hex(randomblob(x % 200 + 1)), x * 7 % 1000 FROM c;
CREATE INDEX ib ON t(b);
UPDATE t SET a = a || 'x' WHERE b % 3 = 0;
DELETE FROM t WHERE b % 5 = 0;
VACUUM;
PRAGMA integrity_check;
SELECT count(*), sum(b), sum(length(a)) > 0 FROM t;
SQL
)
  sqres=$(echo "$sq" | tr '\n' ' ')
  # git: a generated repository with history, branches, a gc, then fsck
  g=$(cd "$d" && export GIT_AUTHOR_DATE="2026-01-01T00:00:00Z" GIT_COMMITTER_DATE="2026-01-01T00:00:00Z" \
      GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@t HOME="$d" &&
      $r git init -q repo && cd repo && for c in 1 2 3 4 5; do
        for f in $(seq 1 60); do seq $((f * c)) $((f * c + 200)) > "f$f.txt"; done
        $r git add -A && $r git commit -q -m "commit $c" && $r git branch "b$c"; done &&
      $r git gc -q --aggressive && $r git fsck --strict --no-progress 2>&1 && echo fsck-ok && $r git rev-parse 'HEAD^{tree}')
  gres=$(echo "$g" | tr '\n' ' ')
  # gcc: compile (cc1, as, ld all preloaded) and run the program
  c=$(cd "$d" && $r gcc -O2 -o prog "$work/prog.c" 2>&1 && $r ./prog)
  for item in sqlite:"$sqres" git:"$gres" gcc:"$c"; do
    name=${item%%:*}; res=${item#*:}
    echo "$m $name: $res"
    echo "$m $name $res" >> "$work/tools-$m.results"
  done
  ok=1
  echo "$sqres" | grep -q "^wal ok " || ok=0
  echo "$gres" | grep -q "fsck-ok" || ok=0
  [ -n "$c" ] || ok=0
  if [ "$m" != glibc ] && ! diff <(sed "s/^$m //" "$work/tools-$m.results") <(sed "s/^glibc //" "$work/tools-glibc.results") >/dev/null; then
    echo "FAIL: tools under $m differ from glibc"; ok=0
  fi
  echo "tools,$m,sqlite+git+gcc,$([ $ok = 1 ] && echo passed || echo failed)" >> "$csv"
  [ $ok = 1 ] || status=1
done
exit $status
