#!/usr/bin/env bash
# The misuse matrix (issue #25): every case of misuse.c under glibc (no preload) and under memspace preloaded:
# the default build, the default build with MEMSPACE_SECURE=1, and the secure build's library when built (make
# test builds BUILD/secure first; without it that column is reported as not built).
# Outcomes: detected (SIGABRT, with a message), harmless (the program saw nothing wrong), UNSAFE (a live block
# handed out again, or the wrong pointer returned: misuse.c exits 10), CRASH (another signal, no report).
# memspace must never be weaker than glibc: each memspace cell is detected with exactly one memspace message that
# names the pointer misuse.c printed (the foreign and stack cases may go to the C library's free, whose own report
# counts: those pointers are not memspace's; memspace reports them itself while the C library's malloc holds no
# block), or harmless. glibc's column is printed for comparison.
# Then the secure modes' guard page after a block mapped on its own (direct_overflow under ulimit -v): SIGSEGV.
# Usage: misuse_matrix.sh MISUSE_PROGRAM LIBMEMSPACE [SECURE_LIBMEMSPACE]
set -u
prog=$1
lib=$2
seclib=${3:-}
ulimit -c 0
cases="double_free double_free_thread double_free_thread2 interior foreign stack never_allocated overflow_1
overflow_16 uaf_link uaf_link_live"
modes="glibc default secure_env"
if [ -n "$seclib" ] && [ -f "$seclib" ]; then modes="$modes secure_build"; else echo "secure build's library not built ($seclib): its column is left out"; fi
[ -f "$lib" ] || { echo "no library $lib"; exit 1; }
out=$(mktemp -d /tmp/memspace-misuse.XXXXXX)
trap 'rm -rf "$out"' EXIT
fail=0

run() { # mode case -> sets outcome, detail
  local mode=$1 c=$2 err="$out/err" rc ptr n
  { # (the braces' redirection keeps bash's own "Aborted" notice out of the output)
    case $mode in
      glibc) timeout 60 "$prog" "$c" 2>"$err" ;;
      default) LD_PRELOAD=$lib timeout 60 "$prog" "$c" 2>"$err" ;;
      secure_env) LD_PRELOAD=$lib MEMSPACE_SECURE=1 timeout 60 "$prog" "$c" 2>"$err" ;;
      secure_build) LD_PRELOAD=$seclib timeout 60 "$prog" "$c" 2>"$err" ;;
    esac
  } 2>/dev/null
  rc=$?
  ptr=$(sed -n 's/^pointer \(0x[0-9a-f]*\)$/\1/p' "$err" | head -1)
  detail=$(grep -v '^pointer ' "$err" | head -1 | cut -c1-150)
  if [ "$rc" = 0 ]; then outcome=harmless
  elif [ "$rc" = 10 ]; then outcome=UNSAFE
  elif [ "$rc" = 134 ]; then
    outcome=detected
    if [ "$mode" != glibc ]; then
      n=$(grep -c '^memspace: ' "$err")
      if [ "$n" = 0 ] && { [ "$c" = foreign ] || [ "$c" = stack ]; }; then
        outcome="detected(libc)"
        grep -q . "$err" || outcome="ABORT-NO-MESSAGE"
      elif [ "$n" != 1 ]; then outcome="ABORT-$n-MESSAGES"
      elif [ -z "$ptr" ] || ! grep '^memspace: ' "$err" | grep -qF -- "$ptr"; then outcome="ABORT-POINTER-NOT-NAMED"
      fi
    fi
  else outcome="CRASH($rc)"
  fi
}

printf '%-20s' case; for m in $modes; do printf ' %-24s' "$m"; done; echo
for c in $cases; do
  printf '%-20s' "$c"
  details=""
  for m in $modes; do
    run "$m" "$c"
    printf ' %-24s' "$outcome"
    details="$details\n    $m: $detail"
    if [ "$m" != glibc ]; then
      case $outcome in detected|"detected(libc)"|harmless) ;; *) fail=1 ;; esac
    fi
  done
  echo
  echo -e "$details" | grep -v '^$' | grep -v ': $' || true
done

# a block mapped on its own (over 8 MiB under ulimit -v 4000000: src/heap/direct.c): the secure modes put a guard
# page after it, so a write one byte past its usable size faults (SIGSEGV) instead of landing in the next block
# (the default build has no guard there: its cell says where the write landed; not a failure)
echo "guard after a block mapped on its own (ulimit -v 4000000, 2 blocks of 9 MiB, one byte written past the second):"
for m in $modes; do
  ( ulimit -v 4000000; run "$m" direct_overflow; echo "$outcome|$(grep 'end is' "$out/err")" ) > "$out/guard"
  IFS='|' read -r outcome where < "$out/guard"
  printf '  %-14s %-12s %s\n' "$m" "$outcome" "$where"
  case $m in secure_env|secure_build) [ "$outcome" = "CRASH(139)" ] || { echo "  FAILED: no guard page in $m"; fail=1; } ;; esac
done
[ "$fail" = 0 ] && echo "memspace: every case detected with its pointer named, or harmless" || echo "FAILED: a memspace cell above is neither detected with its pointer named nor harmless"
exit $fail
