# bench/compare.sh 7ffecde e6061f9 7 (2026-11-27 15:06 UTC, load average 12.67 12.95 11.37)
A = 7ffecdeb0f: review of the change: the block's own mappings are probed (two_mappings: mremap system calls) inside
B = e6061f972d: bench/compare.sh REV_A REV_B: both revisions built under build/compare, interleaved rounds of the he
rounds: 7, interleaved: within a round each command runs for A, then for B; each under flock -w 900 /tmp/memspace-bench.lock /usr/bin/time -o FILE -f %R env ...
A heap (threads 1, 2): LD_PRELOAD=/work/wt/arch22/build/compare/build-7ffecdeb0f/libmemspace.so /work/wt/arch22/build/compare/build-e6061f972d/bench/heap_rptest --threads T --warmup 0 --loops 30 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 0
A spaces: /work/wt/arch22/build/compare/build-7ffecdeb0f/spaces_work_space
A spill: LD_PRELOAD=/work/wt/arch22/build/compare/build-7ffecdeb0f/libmemspace.so MEMSPACE_SPILL_THRESHOLD=64M MEMSPACE_SPILL_DIR=/var/tmp /usr/bin/python3 /work/wt/arch22/build/compare/src-e6061f972d/bench/spill/seed.py 1073741824 2000000
A instructions: LD_PRELOAD=/work/wt/arch22/build/compare/build-7ffecdeb0f/libmemspace.so valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null /work/wt/arch22/build/compare/build-e6061f972d/bench/heap_rptest --threads 1 --warmup 0 --loops 10 --blocks 20000 --ops 20000 --min 16 --max 16000 --idle-ms 0
B heap (threads 1, 2): LD_PRELOAD=/work/wt/arch22/build/compare/build-e6061f972d/libmemspace.so /work/wt/arch22/build/compare/build-e6061f972d/bench/heap_rptest --threads T --warmup 0 --loops 30 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 0
B spaces: /work/wt/arch22/build/compare/build-e6061f972d/spaces_work_space
B spill: LD_PRELOAD=/work/wt/arch22/build/compare/build-e6061f972d/libmemspace.so MEMSPACE_SPILL_THRESHOLD=64M MEMSPACE_SPILL_DIR=/var/tmp /usr/bin/python3 /work/wt/arch22/build/compare/src-e6061f972d/bench/spill/seed.py 1073741824 2000000
B instructions: LD_PRELOAD=/work/wt/arch22/build/compare/build-e6061f972d/libmemspace.so valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null /work/wt/arch22/build/compare/build-e6061f972d/bench/heap_rptest --threads 1 --warmup 0 --loops 10 --blocks 20000 --ops 20000 --min 16 --max 16000 --idle-ms 0
