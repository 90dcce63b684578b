#!/usr/bin/env bash
# Start-up and exit cost (issue #26): a program that runs for a millisecond pays no more than it must. The system
# calls memspace makes itself (the [pages] `syscalls` line: every call through its OS layer, /proc reads
# included) in a whole run, start to exit:
#   - a program that allocates nothing: none (no reservation, no /proc read, no thread, nothing at exit);
#   - one malloc and one free: at most 5 (the heap's reservation and its first segment, and the overcommit mode's
#     read of /proc: open, read, close; no read of vm.max_map_count, no mapping for the first thread's cache); the
#     secure build (third argument "secure") 5 more: its guard-marker probe (3) and the markers of the header and
#     first span.
# The first malloc and free take at most 9 minor page faults in any build, at most 4 in an optimised one (3 here:
# the heap's start-up variables and first heap on one page of .bss after the fork page, which shares the page of
# .data the loader writes anyway (internal.h MSI_START_BSS, cmake/layout.ld), large cold arrays after them, the
# large blocks' classes set at the first large block, its size-class tables constant; one page of the first
# segment's header, whose first page holds the map and the first mini spans' descriptors, and the first block's
# page; its once-only code with the constructors; no clock read, whose first read faults in the vDSO's data page;
# the margin is for where the kernel's 64 KiB fault-around windows fall on the library's text). Of the library's
# writable segment a malloc and free leave at most 3 pages present: the page the loader relocates, the page of
# .data's end and one page of .bss (with the layout script; 4 when the start-up's variables spread over .bss); a
# first large block (200,000 bytes), written and freed, one more: its class, its slot's entry and its cache's
# entry on one page (large.c large_meta, set at the first large block, not at the heap's start-up).
# Loading the library and running its constructors, before main, cost at most 11 minor page faults more than the
# C library alone, and at most 5 more than an empty library preloaded instead (fifth argument: the loader's own cost
# of a preloaded library is the floor's too; medians of 21 runs each, laid out at random: the margin is for where
# the kernel's fault-around windows fall): the start-up code in one part of the text (no libgcc or libc_nonshared
# helper at its far end, no _fini there), no .bss page written by a constructor,
# no table of pointers for the loader to relocate (the writable file-backed part is two pages). Code stays in a
# mapping of its own, apart from headers and constants (-z separate-code, as every Debian library is linked).
# No maintenance thread starts in a single-threaded program (nothing in /proc/PID/task but the program).
# The library's constructor reads the options in one pass over the environment: counted with valgrind (callgrind,
# instructions inside msi_constructor), 200 more environment variables cost at most 20 instructions each (a
# search of the environment per option would cost far more: a pass over it for every option).
# Three of these bounds are properties of an optimised build, left out (and the test reported as skipped) when the
# library is compiled without optimisation (CMAKE_BUILD_TYPE=Debug: -O0, as ms_startup_prog tells with its
# "optimised" mode): there every static inline helper of the headers is a function of its own, placed anywhere in
# the text and outside MSI_HOT_TEXT, and memset and memmove of constant sizes are calls into the C library, not
# stores. So the start-up's page faults, the libc symbols bound (memset and memmove among them) and the stretch of
# text a short process runs measure the compiler's -O0, not the library's layout. Every other bound holds there too and is checked.
set -u
lib=$1 prog=$2 build=${3:-default} layout=${4:-1} floor=${5:-}
. "$(dirname "$0")/../common/ms_test.sh"
fail=0; pass=0
check() { if eval "$2"; then pass=$((pass+1)); else echo "FAIL: $1"; fail=$((fail+1)); fi; }
optimised=$("$prog" optimised)
case $optimised in 0|1) ;; *) echo "FAIL: '$prog optimised' said '$optimised' (0 or 1 expected)"; exit 1;; esac
# optimised_check NAME TEST: check, in an optimised build; elsewhere the part is left out, saying why
optimised_check() {
  if [ "$optimised" = 1 ]; then check "$@"; else
    ms_part_refused "$1: a property of an optimised build; this library is compiled without optimisation (-O0)"
  fi
}
calls() { LD_PRELOAD=$lib MEMSPACE_SHOW_STATS=1 "$prog" "$1" 2>&1 | awk '/^\[pages\]/ {s=1} s && $1 == "syscalls" {print $2}'; }

none=$(calls none); one=$(calls one)
echo "system calls by memspace: allocating nothing $none, one malloc and free $one"
check "allocating nothing: no system call" '[ "$none" = 0 ]'
most=5; [ "$build" = secure ] && most=10
check "one malloc and free: at most $most system calls" '[ -n "$one" ] && [ "$one" -le $most ]'
faults=$(LD_PRELOAD=$lib "$prog" faults)
echo "minor page faults of the first malloc and free: $faults"
check "first malloc and free: at most 9 page faults" '[ -n "$faults" ] && [ "$faults" -le 9 ]'
fmost=4; [ "$build" = secure ] && fmost=9
optimised_check "first malloc and free: at most $fmost page faults" '[ -n "$faults" ] && [ "$faults" -le $fmost ]'
if ms_need_cmd readelf; then
  read -r rw_at rw_size < <(readelf -lW "$lib" | awk '$1 == "LOAD" && $7 == "RW" {print $3, $6}')
  rw_pages=$([ -n "$rw_at" ] && LD_PRELOAD=$lib "$prog" pages "$rw_at" "$rw_size")
  echo "pages of the library's writable segment present after the first malloc and free: $rw_pages"
  if [ "$layout" = 1 ]; then
    check "first malloc and free: at most 3 pages of the writable segment present" \
      '[ -n "$rw_pages" ] && [ "$rw_pages" -ge 1 ] && [ "$rw_pages" -le 3 ]'
    rw_large=$(LD_PRELOAD=$lib "$prog" pages "$rw_at" "$rw_size" 200000)
    echo "the same after a block of 200,000 bytes more: $rw_large"
    check "and a block of 200,000 bytes: at most 4 pages of the writable segment present" \
      '[ -n "$rw_large" ] && [ "$rw_large" -ge 1 ] && [ "$rw_large" -le 4 ]'
  else
    ms_part_refused "writable pages: the linker took no layout script (cmake/layout.ld), .bss in object-file order"
  fi
fi
entry_median() { for i in $(seq 21); do LD_PRELOAD=$1 "$prog" entry; done | sort -n | sed -n 11p; }
plain=$(entry_median ""); loaded=$(entry_median "$lib")
echo "minor page faults before main: $plain without the library, $loaded with it"
emost=11
optimised_check "start-up: at most $emost page faults more than without the library" \
  '[ -n "$plain" ] && [ -n "$loaded" ] && [ $((loaded - plain)) -le $emost ]'
if [ -n "$floor" ]; then
  floored=$(entry_median "$floor")
  echo "minor page faults before main with an empty library preloaded: $floored"
  optimised_check "start-up: at most 5 page faults more than with an empty library preloaded" \
    '[ -n "$floored" ] && [ -n "$loaded" ] && [ $((loaded - floored)) -le 5 ]'
fi
# libc functions and variables the library binds in one malloc and free (each a symbol lookup by the dynamic loader,
# about 700 instructions when lazily bound): at most 11 (no sysconf, getrlimit, syscall or memset at start-up, no
# clock_gettime: the heap's secrets come from the kernel's random bytes, and the purge reads the clock only once
# something is idle), 13 in the secure build (its guard-marker probe's madvise and munmap). glibc's LD_DEBUG lists
# them; without its output (another libc) the check is left out.
# A program that allocates nothing binds at most 5 (the variables the library reads, getauxval and the fork
# handlers' registration; the registering thread is told by a thread-local address, not pthread_self; no
# __cxa_finalize: the library links without the C runtime's start files, CMakeLists.txt -nostartfiles).
libc_bound() { LD_DEBUG=bindings LD_PRELOAD=$lib "$prog" "$1" 2>&1 | grep "binding file [^ ]*libmemspace[^ ]* .* to [^ ]*libc\.so"; }
bound=$(libc_bound one); bound_none=$(libc_bound none)
binds=$(printf '%s\n' "$bound" | grep -c .); binds_none=$(printf '%s\n' "$bound_none" | grep -c .)
echo "libc symbols bound by memspace: allocating nothing $binds_none, one malloc and free $binds"
bmost=11; [ "$build" = secure ] && bmost=13
if [ "$binds" -gt 0 ]; then
  optimised_check "one malloc and free: at most $bmost libc symbols bound" '[ "$binds" -le $bmost ]'
  check "one malloc and free: no clock read" '! printf "%s\n" "$bound" | grep -q "clock_gettime"'
  check "allocating nothing: at most 5 libc symbols bound" '[ "$binds_none" -le 5 ]'
fi
# the library's own symbols the loader looks up for it in every process (a lookup through every loaded object's
# table each, about 1,700 instructions): only malloc, whose process-wide definition decides which copy of the
# library serves (override.c); the library's other functions that it calls or takes the address of are bound at
# link time (hidden names), so a C++ runtime's operator new is never mistaken for its own
self=$(LD_DEBUG=bindings LD_PRELOAD=$lib "$prog" none 2>&1 | grep -c "binding file [^ ]*libmemspace[^ ]* .* to [^ ]*libmemspace")
if [ -n "$binds" ] && [ "$binds" -gt 0 ]; then
  echo "the library's own symbols bound at start-up: $self"
  check "start-up: only malloc of the library's own symbols looked up" '[ "$self" -le 1 ]'
fi
# relocations the dynamic loader applies to the library in every process, preloaded or linked, allocating or not
# (glibc's LD_DEBUG=statistics, the process's count less that of the program alone): at most 120 relative ones
# (no table of string pointers, such as the options' and the statistics lines', which would take hundreds more and
# a page or two more for the loader to copy; the empty heap's current spans are offsets, not 96 pointers, heap.h
# msi_heap_t current_at). Without glibc's output the check is left out.
relative() { LD_DEBUG=statistics LD_PRELOAD=$1 "$prog" none 2>&1 | awk '/number of relative relocations:/ {print $NF; exit}'; }
rplain=$(relative ""); rloaded=$(relative "$lib")
if [ -n "$rplain" ] && [ -n "$rloaded" ]; then
  echo "relative relocations of the library: $((rloaded - rplain))"
  check "start-up: at most 120 relative relocations in the library" '[ $((rloaded - rplain)) -le 120 ]'
fi
# the symbol relocations the dynamic loader resolves when it loads the library, in every process (readelf -r: those
# of .rela.dyn that name a symbol; the calls' slots in .rela.plt are bound lazily, at a first call): each a
# lookup through every loaded object's table, a weak symbol that nothing defines the longest. At most 7: the four
# libc variables and functions the start-up reads (environ, program_invocation_short_name, __libc_single_threaded,
# getauxval), malloc (which copy serves) and the C++ personality routine twice (nothrow.cc's catch clause). None of
# the C runtime's start files (crtbeginS: _ITM_registerTMCloneTable, _ITM_deregisterTMCloneTable, __gmon_start__,
# __cxa_finalize) and no __libc_stack_end (override.c finds the main thread's stack top with getauxval).
if ms_need_cmd readelf; then
  symrel=$(readelf -rW "$lib" | awk '/^Relocation section/ {s = ($3 ~ /rela\.dyn/)} s && $3 ~ /^R_/ && NF >= 7 {n++} END {print n + 0}')
  echo "symbol relocations resolved at load: $symrel"
  check "at most 7 symbol relocations resolved at load" '[ "$symrel" -le 7 ]'
fi
# the C library versions the library requires (readelf -V: its version needs), each checked by the dynamic loader
# against the C library's in every process (about 250 instructions apiece): at most 6 (system calls whose wrappers
# came in a later version, pipe2, fstat, copy_file_range, go through syscall(), as os.h's others do; copies call
# memmove, internal.h msi_memcpy: memcpy is GLIBC_2.14's only symbol the library would use)
if ms_need_cmd readelf; then
  versions=$(readelf -VW "$lib")
  nver=$(printf '%s\n' "$versions" | awk '/Version needs section/ {v = 1} v && $2 == "Name:" && $3 ~ /^GLIBC_/ {n++} END {print n + 0}')
  echo "C library versions required: $nver"
  check "at most 6 C library versions required" '[ "$nver" -le 6 ]'
  check "no GLIBC_2.14 (memcpy) among them" '! printf "%s\n" "$versions" | grep -q "Name: GLIBC_2.14 "'
fi
# every system call of the process, counted by strace (the C library's and memspace's raw ones, prlimit64 among
# them): one malloc and free add at most 7 to a program that allocates nothing (its two getrusage calls, the
# reservation, the first segment and the overcommit read: RLIMIT_AS is asked for only when the reservation is
# refused), the secure build 5 more (as above). The overcommit mode is read from /proc (open, read, close) once, at
# the first allocation: a sandbox the program installs later may kill it for an open() or a prctl (large.c).
if ms_need_cmd strace; then
  tmp=$(mktemp)
  total() { LD_PRELOAD=$lib strace -f -c -o "$tmp" "$prog" "$1" >/dev/null 2>&1 && awk '$NF == "total" {print $4}' "$tmp"; }
  opens() { LD_PRELOAD=$lib strace -f -e trace=open,openat -o "$tmp" "$prog" "$1" >/dev/null 2>&1 &&
    grep -c 'overcommit_memory' "$tmp"; }
  if snone=$(total none) && sone=$(total one) && [ -n "$snone" ] && [ -n "$sone" ]; then
    echo "system calls of the process (strace): allocating nothing $snone, one malloc and free $sone"
    smost=7; [ "$build" = secure ] && smost=12
    check "one malloc and free: at most $smost system calls more than none (strace)" '[ $((sone - snone)) -le $smost ]'
    oone=$(opens one); odense=$(opens dense)
    echo "reads of the overcommit mode: one malloc and free $oone, a block of 200,000 bytes $odense"
    check "one malloc and free: the overcommit mode read once" '[ "$oone" = 1 ]'
    check "a block of 64 KiB-1 MiB: the overcommit mode read once" '[ "$odense" = 1 ]'
  else
    ms_part_refused "strace cannot trace here: $(LD_PRELOAD= strace -o /dev/null true 2>&1 | head -1)"
  fi
  rm -f "$tmp"
fi
# the fork page (src/internal/internal.h msi_fork_page_t: the locks the start-up and fork handlers write) lies whole
# on the page of .data's end, which the dynamic loader writes in every process (it clears the rest of that page for
# .bss): no page of its own for the start-up to write (with nm and readelf from binutils)
if ms_need_cmd nm && ms_need_cmd readelf; then
  fork_page=$(nm -S "$lib" | awk '$4 == "msi_fork_page" {print "0x" $1, "0x" $2}')
  data=$(readelf -SW "$lib" | awk '{for (i = 1; i <= NF; i++) if ($i == ".data") print "0x" $(i + 2), "0x" $(i + 4)}')
  pg=$(getconf PAGESIZE)
  read -r fp fsize <<<"$fork_page"; read -r da dsize <<<"$data"
  echo "fork page at $fp ($fsize bytes), .data at $da ($dsize bytes)"
  check "the fork page lies whole on the page of .data's end" \
    '[ -n "$fp" ] && [ -n "$da" ] && [ $((fp / pg)) = $(((fp + fsize - 1) / pg)) ] && [ $((fp / pg)) = $(((da + dsize - 1) / pg)) ]'
fi
# the libraries the loader maps for this one (readelf -d, its DT_NEEDED): the C library alone. The link adds the C++
# runtime and libm for the C++ operators (nothrow.cc, whose references to the C++ runtime are weak), and a compiler
# driver that does not pass --as-needed by itself (clang; Debian's gcc does) would make each one a dependency: three
# more libraries to map, relocate and initialise in every process, and libstdc++'s constructor allocates, running
# the heap's start-up before main in a program that never allocates. The writable segment's part in the file (with
# readelf -l): at most two pages (.data and the relocated pointers; .bss and the cold arrays of .lbss take none,
# whichever compiler marked .lbss: cmake/layout.ld). A larger one is more of the file for the kernel's fault-around
# to map and more pages to copy at fork.
if ms_need_cmd readelf; then
  needed=$(readelf -dW "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
  echo "libraries needed: $needed"
  check "the C library is the only library needed" '[ -n "$needed" ] && ! printf "%s\n" $needed | grep -qv "^libc\.so\."'
  headers=$(readelf -lW "$lib") # (the LOAD segments' check below reads them too)
  rw_file=$(printf '%s\n' "$headers" | awk '$1 == "LOAD" && $7 == "RW" {print $5}')
  echo "writable segment in the file: $((rw_file)) bytes"
  check "the writable segment takes at most two pages of the file" '[ -n "$rw_file" ] && [ $((rw_file)) -le 8192 ]'
fi
# the library's LOAD segments (cmake/layout.ld, with readelf): three, read-only (headers, dynamic symbols, constants,
# unwind tables), code and data: one mmap in every process fewer than with constants in a segment of their own, and
# the executable one holds code only (no constant or table that could be run). A linker that cannot add to its
# default script (layout "0") links four; the code stays alone then too.
if ms_need_cmd readelf; then
  read -r nload exec_sections < <(printf '%s\n' "$headers" | awk '
    /^Program Headers:/ {ph = 1; getline; next}
    ph && NF == 0 {ph = 0}
    ph {i++; if ($1 == "LOAD") {n++; if ($0 ~ / R?W?E /) ex = sprintf("%02d", i - 1)}}
    /Section to Segment mapping/ {sm = 1}
    sm && $1 == ex && ex != "" {$1 = ""; s = $0}
    END {print n, s}')
  echo "LOAD segments: $nload; the executable one holds:$exec_sections"
  most=3; [ "$layout" = 0 ] && most=4
  check "the library has at most $most LOAD segments" '[ -n "$nload" ] && [ "$nload" -le $most ]'
  check "the executable segment holds code only" \
    '[ -n "$exec_sections" ] && ! printf "%s\n" "$exec_sections" | grep -qE "\.(rodata|eh_frame|dynsym|dynstr|rela)"'
fi
# a fork child of a program that never used spill (a shell's subshell) reads and writes none of spill's .bss, whose
# pages the parent never touched: each would cost the child a page fault at every fork (src/spill/fork.c)
if ms_need_cmd nm && [ -r /proc/self/pagemap ]; then
  spill_state=$(nm -S "$lib" | awk '$4 == "msi_spill_state" {print "0x" $1, "0x" $2}')
  read -r so ssize <<<"$spill_state"
  touched=$([ -n "$so" ] && LD_PRELOAD=$lib "$prog" forkpages "$so" "$ssize")
  echo "pages of spill's state in a fork child of a program that never spilled: $touched"
  check "a fork child touches none of spill's state when spill is unused" '[ "$touched" = 0 ]'
fi
# A fork child of a single-threaded program (a shell's command before its exec, a subshell) against the floor, the
# same program with an empty library preloaded instead (fifth argument; the minor faults a child takes, the mean
# over 50, each run laid out without randomisation: startup_prog forkfaults): a child that ends at once at most 2
# more (the fork handlers write nothing, src/core/fork.c: its fault on their text, and the margin for where the
# kernel's fault-around windows fall on it), one that makes a malloc and a free first at most 2 too (the same
# window holds the malloc's text; its block and its span's descriptor are written as glibc's block and its tcache
# are; the class table is read, on a page of constants a child's page table does not hold).
# A fork page or .bss variable a child's handler wrote would be one more each.
if [ -n "$floor" ]; then
  for m in exit malloc; do
    arg=; [ $m = malloc ] && arg=malloc
    at=$(LD_PRELOAD=$floor "$prog" forkfaults 50 $arg); with=$(LD_PRELOAD=$lib "$prog" forkfaults 50 $arg)
    echo "minor page faults of a fork child ($m): $at with an empty library preloaded, $with with memspace"
    if [ "$at" = refused ] || [ "$with" = refused ]; then
      ms_part_refused "personality(ADDR_NO_RANDOMIZE) refused: counts taken with randomisation move by one"; continue
    fi
    check "a fork child ($m): at most 2 page faults more than with an empty library preloaded" \
      '[ -n "$at" ] && [ -n "$with" ] && [ $((with - at)) -le 2 ]'
  done
fi
# Nor does its fork write a page of the library's writable segment, in the child or in the parent (each such page
# a copy-on-write fault at every fork: its handlers write nothing in a single-threaded process, internal.h
# msi_set_flag, the fork page): the pages a copy of which either made since the fork, once the parent's handlers
# ran (startup_prog forkwrites: /proc/self/pagemap's "exclusively mapped" bit).
if [ -n "${rw_at:-}" ] && [ -r /proc/self/pagemap ]; then
  written=$(LD_PRELOAD=$lib "$prog" forkwrites "$rw_at" "$rw_size")
  echo "pages of the library's writable segment written since a fork, by the child or the parent: $written"
  if [ "$written" = -1 ]; then
    ms_part_refused "pagemap shows no 'exclusively mapped' bit here (Linux before 4.2?)"
  else
    check "a fork writes no page of the library's writable segment" '[ "$written" = 0 ]'
  fi
fi
threads=$(LD_PRELOAD=$lib /bin/sh -c 'ls /proc/$$/task | wc -l')
check "no maintenance thread in a single-threaded program" '[ "$threads" = 1 ]'
ctor_ir() { # instructions in the constructor with an environment of PATH and the given variables
  local out; out=$(mktemp)
  env -i PATH="$PATH" "$@" LD_PRELOAD="$lib" valgrind -q --tool=callgrind --callgrind-out-file="$out" \
    --toggle-collect=msi_constructor "$prog" none >/dev/null 2>&1
  awk '$1 == "summary:" {print $2}' "$out"; rm -f "$out"
}
if ms_need_cmd valgrind; then
  base=$(ctor_ir); more=$(ctor_ir $(for i in $(seq 200); do printf 'V%03d=x ' "$i"; done))
  echo "constructor: $base instructions, $more with 200 more environment variables"
  check "options: one pass over the environment (at most 20 instructions a variable)" \
    '[ -n "$base" ] && [ -n "$more" ] && [ $((more - base)) -le 4000 ]'
fi
# the text a short-lived process runs (constructors, one small and one 200,000-byte block, a fork and its child's
# handlers, exit) lies in one stretch of at most 48 KiB of the library's text (src/internal/internal.h
# MSI_HOT_TEXT: cold code, start-up code and hot code together at the start), so that the kernel's 64 KiB
# fault-around maps it in one or two faults; spread over the whole text it would take three or four. The functions
# callgrind saw run, placed by nm (a static name defined twice is left out: which one ran is not known).
if ms_need_cmd valgrind && ms_need_cmd callgrind_annotate valgrind && ms_need_cmd nm binutils; then
  d=$(mktemp -d)
  LD_PRELOAD=$lib valgrind -q --tool=callgrind --callgrind-out-file="$d/cg.%p" "$prog" dense >/dev/null 2>&1
  LD_PRELOAD=$lib valgrind -q --tool=callgrind --callgrind-out-file="$d/cg.%p" "$prog" forkpages 0 1 >/dev/null 2>&1
  for f in "$d"/cg.*; do callgrind_annotate --threshold=100 "$f" 2>/dev/null; done |
    sed -n 's/.*:\([^ ]*\) \[[^]]*libmemspace[^]]*\]$/\1/p' | sort -u >"$d/ran"
  nm -S "$lib" | awk 'NF == 4 && ($3 == "t" || $3 == "T") {print $4, $1, $2}' | sort >"$d/text"
  lo= hi= n=0
  while read -r name addr size; do
    [ "$(grep -c "^$name " "$d/text")" = 1 ] || continue
    a=$((0x$addr)) e=$((0x$addr + 0x$size)) n=$((n + 1))
    if [ -z "$lo" ] || [ $a -lt $lo ]; then lo=$a; fi
    if [ -z "$hi" ] || [ $e -gt $hi ]; then hi=$e; fi
  done < <(join "$d/ran" "$d/text")
  rm -rf "$d"
  if [ "$n" -gt 10 ]; then
    echo "text a short process runs: $n functions in $(((hi - lo) / 1024)) KiB"
    optimised_check "a short process runs at most 48 KiB of text in one stretch" '[ $((hi - lo)) -le 49152 ]'
  else
    check "callgrind names the functions a short process runs (found $n)" false
  fi
fi
echo "$pass passed, $fail failed"
ms_finish $fail
