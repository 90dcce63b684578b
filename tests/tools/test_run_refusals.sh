#!/usr/bin/env bash
# memspace run refuses up front, with exit status 2 and one line saying why, what would otherwise fail silently:
# a spill directory the program cannot use, space options without a space, an LD_PRELOAD library that would serve
# malloc instead of memspace; it takes GNU --name=value options and the common library options as flags.
# `memspace bench` refuses --quick with --full.
set -u
tool=$1
. "$(dirname "$0")/../common/ms_test.sh"
# MS_TEST_OVERRIDE_BUILD=0 (tests/tools/CMakeLists.txt): what memspace run promises cannot be seen
[ "${MS_TEST_OVERRIDE_BUILD:-1}" = 1 ] || ms_skip_refused "this build has no override layer (a sanitizer build): memspace run preloads a library that serves no malloc and brings the sanitizer's runtime into the program (under ThreadSanitizer a program's SIGSEGV becomes its report, exit 66; with jemalloc preloaded the tool itself crashes)"
fail=0; pass=0
check() { if eval "$2"; then pass=$((pass+1)); else echo "FAIL: $1"; fail=$((fail+1)); fi; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

msg=$("$tool" run --spill-threshold 1M --spill-dir "$tmp/missing" -- true 2>&1); st=$?
check "missing spill directory: status 2 and the reason" '[ $st = 2 ] && [[ "$msg" == *"$tmp/missing"*"does not exist"* ]]'
touch "$tmp/file"
msg=$("$tool" run --spill-threshold 1M --spill-dir "$tmp/file" -- true 2>&1); st=$?
check "a file as spill directory: status 2" '[ $st = 2 ] && [[ "$msg" == *"not a directory"* ]]'
if [ -d /dev/shm ] && [ "$(stat -f -c %T /dev/shm)" = tmpfs ]; then
  msg=$("$tool" run --spill-threshold 1M --spill-dir /dev/shm -- true 2>&1); st=$?
  check "a tmpfs spill directory runs with a warning that it is refused" '[ $st = 0 ] && [[ "$msg" == *"/dev/shm is on tmpfs"*"refused"* ]]'
  lines=$(printf '%s\n' "$msg" | grep -c .)
  check "...one warning, not a second one from the library contradicting it, got: $msg" '[ "$lines" = 1 ]'
fi
# an argument error is said first and alone, before any check of the machine (spill directory, room for a space)
msg=$("$tool" run --spill-dir "$tmp/missing" --spill-threshold abc -- true 2>&1); st=$?
check "invalid size after an unusable --spill-dir: status 2, the size named alone, got: $msg" \
  '[ $st = 2 ] && [ "$msg" = "memspace run: --spill-threshold: '"'abc'"' is not a size (bytes, or a number with K, M, G or T)" ]'
msg=$("$tool" run --spill-threshold 1M --spill-dir "$tmp/missing" --heap bogus -- true 2>&1); st=$?
check "bad --heap after an unusable --spill-dir: status 2, the option alone, got: $msg" \
  '[ $st = 2 ] && [ "$msg" = "memspace run: --heap takes unlimited, performance, size or none" ]'
msg=$("$tool" run --space-initial 1000000G --purge-delay soon -- true 2>&1); st=$?
check "bad --purge-delay after a space the machine cannot back: status 2, the option alone, got: $msg" \
  '[ $st = 2 ] && [[ "$msg" == *"--purge-delay takes"* ]] && [[ "$msg" != *"cannot be backed"* ]]'
msg=$("$tool" run --spill-threshold 1M --spill-dir "$tmp/missing" 2>&1); st=$?
check "no program after an unusable --spill-dir: status 2, that alone, got: $msg" \
  '[ $st = 2 ] && [[ "$msg" == "memspace run: no program given"* ]] && [[ "$msg" != *"$tmp/missing"* ]]'
msg=$("$tool" run --space-expand 0 -- true 2>&1); st=$?
check "--space-expand without a space: status 2" '[ $st = 2 ] && [[ "$msg" == *"need --space-initial"* ]]'
# a space the machine cannot back is refused when its size comes from the environment too (the program reads it)
msg=$(MEMSPACE_SPACE_INITIAL=1000000G "$tool" run -- sh -c 'echo started' 2>&1); st=$?
check "MEMSPACE_SPACE_INITIAL=1000000G: status 2, the program not started, got: $st $msg" \
  '[ $st = 2 ] && [[ "$msg" == "memspace run: MEMSPACE_SPACE_INITIAL=1000000G: a space of "*"cannot be backed"* ]]'
# a size the library reads as no space (0, and an invalid value it replaces by the default 0) is no space either
for v in 0 0K junk " "; do
  msg=$(MEMSPACE_SPACE_INITIAL=$v "$tool" run --space-expand 1M -- true 2>&1); st=$?
  check "--space-expand with MEMSPACE_SPACE_INITIAL='$v' (no space): status 2, got: $st $msg" '[ $st = 2 ] && [[ "$msg" == *"need --space-initial"* ]]'
done
msg=$("$tool" run --space-initial 0 --inherit -- true 2>&1); st=$?
check "--inherit with --space-initial 0: status 2, got: $st $msg" '[ $st = 2 ] && [[ "$msg" == *"need --space-initial"* ]]'
out=$(MEMSPACE_SPACE_INITIAL=" 16M " "$tool" run --space-at firstalloc -- sh -c 'echo ok' 2>/dev/null)
check "--space-at with MEMSPACE_SPACE_INITIAL=' 16M ' from the environment runs" '[ "$out" = ok ]'
out=$(MEMSPACE_SPACE_INITIAL=16M "$tool" run --space-expand 1M -- sh -c 'echo ok' 2>/dev/null)
check "--space-expand with MEMSPACE_SPACE_INITIAL from the environment runs" '[ "$out" = ok ]'
# an expand step no expansion of that space could take: the library would warn and run the space at a fixed size
msg=$("$tool" run --space-initial 1M --space-expand 64T -- true 2>&1); st=$?
check "--space-expand above the largest step: status 2 and the limit, got: $msg" \
  '[ $st = 2 ] && [[ "$msg" == *"--space-expand 64T: above the largest step"*"68719476736 bytes"* ]]'
msg=$(MEMSPACE_SPACE_INITIAL=1M "$tool" run --space-expand 65G -- true 2>&1); st=$?
check "...with the space's size from the environment, got: $msg" '[ $st = 2 ]'
msg=$(MEMSPACE_SPACE_EXPAND=64T "$tool" run --space-initial 1M -- sh -c 'echo started' 2>&1); st=$?
check "...with the step from the environment (the program reads it): status 2, not started, got: $msg" \
  '[ $st = 2 ] && [[ "$msg" == "memspace run: MEMSPACE_SPACE_EXPAND=64T: above the largest step"* ]]'
out=$(MEMSPACE_SPACE_EXPAND=64T "$tool" run -- sh -c 'echo ok' 2>&1)
check "...but with no space the environment's step is nothing to refuse, got: $out" '[ "$out" = ok ]'
msg=$("$tool" run --space-initial 1M --space-expand 64G -- true 2>&1); st=$?
check "--space-expand at the largest step runs, got: $msg" '[ $st = 0 ] && [ -z "$msg" ]'
out=$("$tool" run --heap=size --purge-delay=-1 --secure --verbose -- sh -c 'echo "$MEMSPACE_CACHE $MEMSPACE_PURGE_DELAY $MEMSPACE_SECURE $MEMSPACE_VERBOSE"' 2>/dev/null)
check "--name=value options and the flags become variables" '[ "$out" = "size -1 1 1" ]'
"$tool" run --purge-delay soon -- true 2>/dev/null; check "bad --purge-delay refused" '[ $? = 2 ]'
peer=""
for f in /usr/lib/*/libjemalloc.so.2 /usr/lib/*/libmimalloc.so.2 /usr/lib/*/libtcmalloc_minimal.so.4; do
  [ -e "$f" ] && peer=$f && break
done
if [ -n "$peer" ]; then
  msg=$(LD_PRELOAD=$peer "$tool" run -- true 2>&1); st=$?
  check "an LD_PRELOAD that defines malloc is refused, named" '[ $st = 2 ] && [[ "$msg" == *"$peer"*"defines malloc"* ]]'
  # the same library named through the loader's $LIB token (where the loader expands it to the peer's directory)
  for dst in '/usr/$LIB/' '/usr/${LIB}/'; do
    entry="$dst$(basename "$peer")"
    if [ -z "$(LD_PRELOAD=$entry /bin/true 2>&1)" ]; then
      msg=$(LD_PRELOAD=$entry "$tool" run -- true 2>&1); st=$?
      check "an LD_PRELOAD entry $entry (a malloc library) is refused" '[ $st = 2 ] && [[ "$msg" == *"defines malloc"* ]]'
    fi
  done
  # $ORIGIN names the program's directory for the loader (a dlopen in the tool would take the tool's)
  mkdir "$tmp/origin" && cp "$peer" "$tmp/origin/" && cp /bin/true "$tmp/origin/prog"
  entry="\$ORIGIN/$(basename "$peer")"
  if [ -z "$(cd / && LD_PRELOAD=$entry "$tmp/origin/prog" 2>&1)" ]; then
    msg=$(LD_PRELOAD=$entry "$tool" run -- "$tmp/origin/prog" 2>&1); st=$?
    check "an LD_PRELOAD entry $entry (a malloc library beside the program) is refused, got: $msg" \
      '[ $st = 2 ] && [[ "$msg" == *"defines malloc"* ]]'
    msg=$(cd "$tmp/origin" && LD_PRELOAD=$entry PATH="/nonexistent::$PATH" "$tool" run -- prog 2>&1); st=$?
    check "...also for a program found through an empty PATH entry (the current directory)" \
      '[ $st = 2 ] && [[ "$msg" == *"defines malloc"* ]]'
    msg=$(cd "$tmp/origin" && LD_PRELOAD=$entry PATH="/nonexistent:" "$tool" run -- prog 2>&1); st=$?
    check "...also through a trailing ':' (an empty last entry)" '[ $st = 2 ] && [[ "$msg" == *"defines malloc"* ]]'
    mkdir -p "$tmp/dirs/prog"
    msg=$(cd / && LD_PRELOAD=$entry PATH="$tmp/dirs:$tmp/origin:$PATH" "$tool" run -- prog 2>&1); st=$?
    check "...also past a directory of the program's name earlier on PATH (execvp passes it by), got: $msg" \
      '[ $st = 2 ] && [[ "$msg" == *"defines malloc"* ]]'
    printf '#!%s\n' "$tmp/origin/prog" > "$tmp/script" && chmod +x "$tmp/script"
    msg=$(LD_PRELOAD=$entry "$tool" run -- "$tmp/script" 2>&1); st=$?
    check "...and for a script whose interpreter lies there" '[ $st = 2 ] && [[ "$msg" == *"defines malloc"* ]]'
    printf '#!%s\n' "$tmp/script" > "$tmp/script2" && chmod +x "$tmp/script2"
    msg=$(LD_PRELOAD=$entry "$tool" run -- "$tmp/script2" 2>&1); st=$?
    check "...and for a script whose interpreter is that script (the kernel runs the last interpreter), got: $msg" \
      '[ $st = 2 ] && [[ "$msg" == *"defines malloc"* ]]'
    # a script without "#!" beside the library: the kernel refuses it (ENOEXEC) and execvp runs it with /bin/sh,
    # whose directory the loader's $ORIGIN names: the library is not loaded, and memspace serves the script
    printf 'echo "$LD_PRELOAD"\n' > "$tmp/origin/noshebang" && chmod +x "$tmp/origin/noshebang"
    if [ ! -e "$(dirname "$(realpath /bin/sh)")/$(basename "$peer")" ]; then
      msg=$(LD_PRELOAD=$entry "$tool" run -- "$tmp/origin/noshebang" 2>/dev/null); st=$?
      check "a script without #! beside a malloc library named by \$ORIGIN runs with memspace, got: $st $msg" \
        '[ $st = 0 ] && [[ "$msg" == "$entry":/*libmemspace.so* ]]'
    fi
  fi
else
  echo "SKIP: no peer allocator installed to preload"
fi
# a "#!" line naming a FIFO: execve refuses it (EACCES); following it for $ORIGIN must not wait on the FIFO
fifodir=$(mktemp -d) && mkfifo "$fifodir/fifo" && chmod +x "$fifodir/fifo" &&
  printf '#!%s\n' "$fifodir/fifo" > "$fifodir/s" && chmod +x "$fifodir/s"
LD_PRELOAD='$ORIGIN/libnone.so' timeout 20 "$tool" run -- "$fifodir/s" >/dev/null 2>&1; st=$?
check "a script whose interpreter is a FIFO is refused by the exec, not waited on (status $st)" '[ $st = 126 ]'
rm -rf "$fifodir"
shim=$(ls /usr/lib/*/libpthread.so.0 2>/dev/null | head -1)
if [ -n "$shim" ]; then
  out=$(LD_PRELOAD=$shim "$tool" run -- sh -c 'echo "$LD_PRELOAD"' 2>/dev/null)
  check "an LD_PRELOAD without malloc is kept, memspace appended" '[[ "$out" == "$shim":/*libmemspace.so* ]]'
fi
"$tool" bench heap --quick --full 2>/dev/null; check "bench --quick --full refused" '[ $? = 2 ]'
echo "$pass passed, $fail failed"
[ $fail = 0 ]
