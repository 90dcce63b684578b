#!/usr/bin/env bash
# Real programs under the preloaded library: exit status and output must equal the same run under glibc, and
# memspace must have served them: the preloaded run prints memspace's statistics at exit (MEMSPACE_SHOW_STATS=1)
# from at least PROCS processes, one of them with heap memory mapped (a preload the loader ignored prints none).
# A program that is not installed is a skip (a failure under CI=true: tests/common/ms_test.sh).
# usage: preload_programs.sh LIBRARY MEMSPACE_TOOL CXX_PROGRAM
set -u
lib=$1 tool=$2 cxxprog=$3
. "$(dirname "$0")/../common/ms_test.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
# compare NAME PROCS CMD...: runs CMD plain and preloaded, compares stdout and the exit status; the preloaded
# run must show memspace's statistics from PROCS processes or more
compare() {
  local name=$1 procs=$2; shift 2
  local a b sa sb stats
  a=$("$@" 2>"$work/err.glibc"); sa=$?
  b=$(LD_PRELOAD=$lib MEMSPACE_SHOW_STATS=1 "$@" 2>"$work/err.memspace"); sb=$?
  stats=$(grep -cE '^memspace [0-9.]+ statistics of pid [0-9]+ ' "$work/err.memspace")
  if [ "$a" != "$b" ] || [ $sa != $sb ]; then
    echo "FAIL $name: status glibc $sa memspace $sb"; diff <(echo "$a") <(echo "$b") | head -5
    head -5 "$work/err.memspace"; fail=1
  elif [ "$stats" -lt "$procs" ] || ! grep -qE '^  mapped +[1-9]' "$work/err.memspace"; then
    echo "FAIL $name: same output, but memspace did not serve it ($stats processes printed statistics, $procs expected; no heap memory mapped?)"
    head -5 "$work/err.memspace"; fail=1
  else
    echo "ok   $name (status $sa, $(echo "$a" | wc -c) bytes of output, memspace in $stats processes)"
  fi
}
skip_unless() { ms_need_cmd "$1"; }

py='import json, collections
d = [{"k": i, "v": str(i) * (i % 17), "l": list(range(i % 9))} for i in range(200000)]
s = json.dumps(d)
c = collections.Counter(len(x["v"]) for x in json.loads(s))
print(len(s), sorted(c.items())[:5], sum(len(str(x)) for x in d[:5000]))'
if skip_unless python3; then
  python=$(python3 -c 'import sys; print(sys.executable)') # the interpreter itself, not a wrapper script (pyenv)
  compare python3 1 "$python" -c "$py"
  compare python3-malloc 1 env PYTHONMALLOC=malloc "$python" -c "$py"
fi
if skip_unless sqlite3; then
  sql='create table t(a integer primary key, b text, c real);
with recursive n(x) as (select 1 union all select x+1 from n where x < 200000)
insert into t select x, printf("%d-%s", x, hex(x*x)), x/7.0 from n;
create index ib on t(b);
select count(*), sum(length(b)), round(sum(c), 2) from t;
select b from t where a % 50000 = 0 order by b;'
  compare sqlite3 1 sqlite3 :memory: "$sql"
fi
if skip_unless gcc; then
  { echo '#include <stdio.h>'; for i in $(seq 1 400); do echo "static int f$i(int x){ int a[16]; for(int i=0;i<16;i++) a[i]=x*i+$i; return a[x&15]+(x>$i?f$((i>1?i-1:1))(x-1):0);}"; done
    echo 'int main(void){ printf("%d\n", f400(77)); return 0; }'; } > "$work/gen.c"
  compare gcc-compile 4 sh -c "gcc -O2 -o '$work/gen' '$work/gen.c' && '$work/gen' && gcc -O2 -c -o - '$work/gen.c' | md5sum"
fi
if skip_unless git; then
  export GIT_AUTHOR_DATE='2020-01-01T00:00:00Z' GIT_COMMITTER_DATE='2020-01-01T00:00:00Z'
  script='cd "$1" && rm -rf r && git init -q r && cd r && for i in $(seq 1 30); do seq $i 1000 > f$((i%5)); git add -A; git -c user.name=t -c user.email=t@e commit -qm "c$i"; done; git log --format=%H%s | md5sum; git gc -q && git count-objects -v | grep -c .'
  compare git 30 sh -c "$script" sh "$work"
fi
compare cxx-program 1 "$cxxprog"
# memspace run passes the exit status through and sets the environment
out=$("$tool" run --heap size -- sh -c 'echo "$MEMSPACE_CACHE"; exit 3'); st=$?
if [ "$out" = size ] && [ $st = 3 ]; then echo "ok   memspace run (status 3, --heap size)"; else echo "FAIL memspace run: '$out' status $st"; fail=1; fi
ms_finish $fail
