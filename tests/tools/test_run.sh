#!/usr/bin/env bash
# memspace run (docs/contract.md §2): exit status is the program's, LD_PRELOAD appended with an absolute path,
# settings passed as MEMSPACE_* variables, bad options refused, programs ignoring LD_PRELOAD named.
set -u
tool=$1
. "$(dirname "$0")/../common/ms_test.sh"
# MS_TEST_OVERRIDE_BUILD=0 (tests/tools/CMakeLists.txt): what memspace run promises cannot be seen
[ "${MS_TEST_OVERRIDE_BUILD:-1}" = 1 ] || ms_skip_refused "this build has no override layer (a sanitizer build): memspace run preloads a library that serves no malloc and brings the sanitizer's runtime into the program (under ThreadSanitizer a program's SIGSEGV becomes its report, exit 66; with jemalloc preloaded the tool itself crashes)"
fail=0; pass=0
check() { if eval "$2"; then pass=$((pass+1)); else echo "FAIL: $1"; fail=$((fail+1)); fi; }

"$tool" run -- sh -c 'exit 7'; check "exit status passed through" '[ $? = 7 ]'
out=$(LD_PRELOAD= "$tool" run -- sh -c 'echo "$LD_PRELOAD"')
check "LD_PRELOAD is absolute and names libmemspace" '[[ "$out" == /*libmemspace.so* ]]'
out=$(LD_PRELOAD=/nonexistent-first.so "$tool" run -- sh -c 'echo "$LD_PRELOAD"' 2>/dev/null)
check "existing LD_PRELOAD kept first" '[[ "$out" == /nonexistent-first.so:/*libmemspace.so* ]]'
# whether LD_PRELOAD already holds memspace is decided entry by entry (split at ':' and spaces), each entry's
# resolved path against the library's: not by a substring of the list
lib=$(LD_PRELOAD= "$tool" run -- sh -c 'echo "$LD_PRELOAD"')
out=$(LD_PRELOAD="$lib.gone" "$tool" run -- sh -c 'echo "$LD_PRELOAD"' 2>/dev/null)
check "an entry that only starts with the library's path: memspace appended" '[ "$out" = "$lib.gone:$lib" ]'
out=$(LD_PRELOAD="/x$lib" "$tool" run -- sh -c 'echo "$LD_PRELOAD"' 2>/dev/null)
check "an entry that only ends with the library's path: memspace appended" '[ "$out" = "/x$lib:$lib" ]'
links=$(mktemp -d)
ln -s "$lib" "$links/libms-link.so"
out=$(LD_PRELOAD="$links/libms-link.so" "$tool" run -- sh -c 'echo "$LD_PRELOAD"' 2>/dev/null)
check "a symbolic link to the library counts as it: LD_PRELOAD kept as it is" '[ "$out" = "$links/libms-link.so" ]'
out=$(LD_PRELOAD="/nonexistent-first.so $lib" "$tool" run -- sh -c 'echo "$LD_PRELOAD"' 2>/dev/null)
check "the library after a space: LD_PRELOAD kept as it is" '[ "$out" = "/nonexistent-first.so $lib" ]'
libc=$(ls /usr/lib/*/libc.so.6 /lib/*/libc.so.6 2>/dev/null | head -1)
if [ -n "$libc" ]; then
  msg=$(LD_PRELOAD="$libc:$lib" "$tool" run -- true 2>&1); st=$?
  check "a library defining malloc before memspace's in LD_PRELOAD is refused, got: $msg" \
    '[ $st = 2 ] && [[ "$msg" == *"$libc"*"defines malloc"* ]]'
fi
# an entry without a '/' is looked up as the loader does (library path, not the current directory)
msg=$(LD_PRELOAD="libc.so.6:$lib" "$tool" run -- true 2>&1); st=$?
check "a library named without a '/' that defines malloc is refused, got: $msg" \
  '[ $st = 2 ] && [[ "$msg" == *"libc.so.6"*"defines malloc"* ]]'
cp "$lib" "$links/libms-cwd-copy.so"
out=$(cd "$links" && LD_PRELOAD="libms-cwd-copy.so" "$tool" run -- sh -c 'echo "$LD_PRELOAD"' 2>/dev/null)
check "a copy in the current directory named without a '/' is not the library: memspace appended, got: $out" \
  '[ "$out" = "libms-cwd-copy.so:$lib" ]'
rm -rf "$links"
# a T size (docs/options.md): taken by the tool, passed on, and taken by the library without a word
out=$("$tool" run --spill-threshold 1T -- sh -c 'echo "$MEMSPACE_SPILL_THRESHOLD"' 2>&1)
check "--spill-threshold 1T taken by the tool and the library, got: $out" '[ "$out" = 1T ]'
# --spill with --spill-threshold, in either order: the size applies (run --help says so)
for order in "--spill --spill-threshold 1M" "--spill-threshold 1M --spill"; do
  out=$("$tool" run $order -- sh -c 'echo "$MEMSPACE_SPILL_THRESHOLD"' 2>&1)
  check "run $order: the threshold's size applies, got: $out" '[ "$out" = 1M ]'
done
out=$("$tool" run --help); check "run --help says which of the two applies" '[[ "$out" == *"given both, --spill-threshold"* ]]'
out=$("$tool" run --help)
check "run --help names the T suffix" '[[ "$out" == *"K, M, G or T"* ]]'
out=$("$tool" run --heap size --spill-threshold 1G --spill-dir /tmp --stats -- sh -c 'echo "$MEMSPACE_CACHE $MEMSPACE_SPILL_THRESHOLD $MEMSPACE_SPILL_DIR $MEMSPACE_SHOW_STATS"' 2>/dev/null)
check "heap/spill/stats options become variables" '[ "$out" = "size 1G /tmp 1" ]'
# a program that closes stderr before exiting (coreutils' close_stdout) still gets its statistics
out=$(echo x | "$tool" run --stats -- sort 2>&1 >/dev/null)
check "--stats with sort (stderr closed at exit)" '[[ "$out" == *"memspace "*" statistics"* ]]'
msg=$("$tool" run --spill-dir /tmp -- true 2>&1)
check "a spill directory without a threshold is pointed out" '[[ "$msg" == *"without --spill or a spill threshold"* ]]'
msg=$(MEMSPACE_SPILL_DIR=/tmp "$tool" run -- true 2>&1)
check "...but not a MEMSPACE_SPILL_DIR of the environment" '[ -z "$msg" ]'
out=$("$tool" run --space-initial 64M --space-expand 0 --space-at firstalloc --inherit -- sh -c 'echo "$MEMSPACE_SPACE_INHERIT"' 2>/dev/null)
check "--inherit sets MEMSPACE_SPACE_INHERIT" '[ "$out" = "1" ]'
"$tool" run --heap fast -- true 2>/dev/null; check "bad preset refused" '[ $? = 2 ]'
"$tool" run --space-initial 12Q -- true 2>/dev/null; check "bad size refused" '[ $? = 2 ]'
"$tool" run 2>/dev/null; check "missing program refused" '[ $? = 2 ]'
out=$("$tool" run --help); check "run --help: usage on stdout, status 0" '[ $? = 0 ] && [[ "$out" == *"--spill-threshold SIZE"* ]]'
out=$("$tool" bench --help); check "bench --help: usage on stdout, status 0" '[ $? = 0 ] && [[ "$out" == *"PART"* ]]'
"$tool" run -- /nonexistent/program 2>/dev/null; check "missing program gives 127" '[ $? = 127 ]'
# the library missing from its place (a copy of the tool alone, in a bin/ of its own): 127 too, the path named
alone=$(mktemp -d); mkdir "$alone/bin"; cp "$tool" "$alone/bin/memspace"
msg=$("$alone/bin/memspace" run -- true 2>&1); st=$?
rm -rf "$alone"
check "the library missing: status 127 and its path named, got: $st $msg" \
  '[ $st = 127 ] && [[ "$msg" == *"cannot find the library $alone/"*"libmemspace.so"* ]]'
"$tool" run -- sh -c 'kill -SEGV $$' 2>/dev/null; check "a program killed by SIGSEGV: status 139 as from the shell" '[ $? = 139 ]'
noexec=$(mktemp); "$tool" run -- "$noexec" 2>/dev/null; st=$?; rm -f "$noexec"
check "a file that is not executable gives 126" '[ $st = 126 ]'
msg=$(MEMSPACE_CACHE=bogus "$tool" run -- sh -c 'exit 0' 2>&1)
check "an invalid MEMSPACE_* value is reported once (by the program, not by the tool too)" \
  '[ "$(echo "$msg" | grep -c "invalid value .bogus. for MEMSPACE_CACHE")" = 1 ]'
msg=$(MEMSPACE_SHOW_STATS=1 "$tool" run -- /nonexistent/program 2>&1)
check "the tool prints no statistics of its own when the program cannot run" '[[ "$msg" != *statistics* ]]'
if [ -u /usr/bin/passwd ] && [ "$(id -u)" != 0 ]; then
  msg=$(MEMSPACE_VERBOSE=1 "$tool" run -- /usr/bin/passwd --help 2>&1 >/dev/null)
  check "setuid program named under MEMSPACE_VERBOSE" '[[ "$msg" == *"will not use memspace"* ]]'
elif [ -u /usr/bin/passwd ]; then # root runs setuid-root passwd without secure-execution: memspace is in it
  msg=$(MEMSPACE_VERBOSE=1 "$tool" run -- /usr/bin/passwd --help 2>&1 >/dev/null)
  check "setuid-root program run by root not named (tests/attack/run_secure_named.sh names the others)" \
    '[[ "$msg" != *"will not use memspace"* ]]'
else
  ms_part_missing "a setuid /usr/bin/passwd (Debian package passwd) for the setuid check"
fi
echo "$pass passed, $fail failed"
ms_finish $fail
