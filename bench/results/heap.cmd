command: build/memspace bench all
part: heap
mode: default
date: 2026-11-22T02:43:03Z
machine: cpu="Intel(R) Xeon(R) Processor" cores=2 memory_bytes=25274793984 kernel="Linux 6.18.44-fc-v445" arch=x86_64
libraries: glibc=2.36 memspace=0.1.0 jemalloc=5.3.0-1 mimalloc=2.0.9+ds-2 tcmalloc=2.10-1 tbbmalloc=2021.8.0-2+deb12u1
heap parameters: rounds=3 warmup=2 loops=3 blocks=150000 ops=75000 sizes=16..16000(linear falloff) idle_ms=1000 runs=5 py_waves=3 py_n=25000 sql_rows=1000000 gcc_funcs=70 realloc_max=1073741824 realloc_limit_s=1.5
child rptest: /work/benchclone/build/bench/heap_rptest --threads 1 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 1000
child rptest: LD_PRELOAD=/work/benchclone/build/libmemspace.so MEMSPACE_CACHE=unlimited /work/benchclone/build/bench/heap_rptest --threads 1 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 1000
child rptest: LD_PRELOAD=/work/benchclone/build/libmemspace.so MEMSPACE_CACHE=performance /work/benchclone/build/bench/heap_rptest --threads 1 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 1000
child rptest: LD_PRELOAD=/work/benchclone/build/libmemspace.so MEMSPACE_CACHE=size /work/benchclone/build/bench/heap_rptest --threads 1 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 1000
child rptest: LD_PRELOAD=/work/benchclone/build/libmemspace.so MEMSPACE_CACHE=none /work/benchclone/build/bench/heap_rptest --threads 1 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 1000
child rptest: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /work/benchclone/build/bench/heap_rptest --threads 1 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 1000
child rptest: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2 /work/benchclone/build/bench/heap_rptest --threads 1 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 1000
child rptest: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 /work/benchclone/build/bench/heap_rptest --threads 1 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 1000
child rptest: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtbbmalloc_proxy.so.2 /work/benchclone/build/bench/heap_rptest --threads 1 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 1000
child rptest: /work/benchclone/build/bench/heap_rptest --threads 2 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 1000
child rptest: LD_PRELOAD=/work/benchclone/build/libmemspace.so MEMSPACE_CACHE=unlimited /work/benchclone/build/bench/heap_rptest --threads 2 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 1000
child rptest: LD_PRELOAD=/work/benchclone/build/libmemspace.so MEMSPACE_CACHE=performance /work/benchclone/build/bench/heap_rptest --threads 2 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 1000
child rptest: LD_PRELOAD=/work/benchclone/build/libmemspace.so MEMSPACE_CACHE=size /work/benchclone/build/bench/heap_rptest --threads 2 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 1000
child rptest: LD_PRELOAD=/work/benchclone/build/libmemspace.so MEMSPACE_CACHE=none /work/benchclone/build/bench/heap_rptest --threads 2 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 1000
child rptest: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /work/benchclone/build/bench/heap_rptest --threads 2 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 1000
child rptest: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2 /work/benchclone/build/bench/heap_rptest --threads 2 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 1000
child rptest: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 /work/benchclone/build/bench/heap_rptest --threads 2 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 1000
child rptest: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtbbmalloc_proxy.so.2 /work/benchclone/build/bench/heap_rptest --threads 2 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 1000
child rptest: /work/benchclone/build/bench/heap_rptest --threads 4 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 1000
child rptest: LD_PRELOAD=/work/benchclone/build/libmemspace.so MEMSPACE_CACHE=unlimited /work/benchclone/build/bench/heap_rptest --threads 4 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 1000
child rptest: LD_PRELOAD=/work/benchclone/build/libmemspace.so MEMSPACE_CACHE=performance /work/benchclone/build/bench/heap_rptest --threads 4 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 1000
child rptest: LD_PRELOAD=/work/benchclone/build/libmemspace.so MEMSPACE_CACHE=size /work/benchclone/build/bench/heap_rptest --threads 4 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 1000
child rptest: LD_PRELOAD=/work/benchclone/build/libmemspace.so MEMSPACE_CACHE=none /work/benchclone/build/bench/heap_rptest --threads 4 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 1000
child rptest: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /work/benchclone/build/bench/heap_rptest --threads 4 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 1000
child rptest: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2 /work/benchclone/build/bench/heap_rptest --threads 4 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 1000
child rptest: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 /work/benchclone/build/bench/heap_rptest --threads 4 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 1000
child rptest: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtbbmalloc_proxy.so.2 /work/benchclone/build/bench/heap_rptest --threads 4 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 1000
child rptest_cross: /work/benchclone/build/bench/heap_rptest --threads 2 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 0 --cross
child rptest_cross: LD_PRELOAD=/work/benchclone/build/libmemspace.so MEMSPACE_CACHE=unlimited /work/benchclone/build/bench/heap_rptest --threads 2 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 0 --cross
child rptest_cross: LD_PRELOAD=/work/benchclone/build/libmemspace.so MEMSPACE_CACHE=performance /work/benchclone/build/bench/heap_rptest --threads 2 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 0 --cross
child rptest_cross: LD_PRELOAD=/work/benchclone/build/libmemspace.so MEMSPACE_CACHE=size /work/benchclone/build/bench/heap_rptest --threads 2 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 0 --cross
child rptest_cross: LD_PRELOAD=/work/benchclone/build/libmemspace.so MEMSPACE_CACHE=none /work/benchclone/build/bench/heap_rptest --threads 2 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 0 --cross
child rptest_cross: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /work/benchclone/build/bench/heap_rptest --threads 2 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 0 --cross
child rptest_cross: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2 /work/benchclone/build/bench/heap_rptest --threads 2 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 0 --cross
child rptest_cross: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 /work/benchclone/build/bench/heap_rptest --threads 2 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 0 --cross
child rptest_cross: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtbbmalloc_proxy.so.2 /work/benchclone/build/bench/heap_rptest --threads 2 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 0 --cross
child rptest_cross: /work/benchclone/build/bench/heap_rptest --threads 4 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 0 --cross
child rptest_cross: LD_PRELOAD=/work/benchclone/build/libmemspace.so MEMSPACE_CACHE=unlimited /work/benchclone/build/bench/heap_rptest --threads 4 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 0 --cross
child rptest_cross: LD_PRELOAD=/work/benchclone/build/libmemspace.so MEMSPACE_CACHE=performance /work/benchclone/build/bench/heap_rptest --threads 4 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 0 --cross
child rptest_cross: LD_PRELOAD=/work/benchclone/build/libmemspace.so MEMSPACE_CACHE=size /work/benchclone/build/bench/heap_rptest --threads 4 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 0 --cross
child rptest_cross: LD_PRELOAD=/work/benchclone/build/libmemspace.so MEMSPACE_CACHE=none /work/benchclone/build/bench/heap_rptest --threads 4 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 0 --cross
child rptest_cross: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /work/benchclone/build/bench/heap_rptest --threads 4 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 0 --cross
child rptest_cross: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2 /work/benchclone/build/bench/heap_rptest --threads 4 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 0 --cross
child rptest_cross: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 /work/benchclone/build/bench/heap_rptest --threads 4 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 0 --cross
child rptest_cross: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtbbmalloc_proxy.so.2 /work/benchclone/build/bench/heap_rptest --threads 4 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 0 --cross
child python_pymalloc: /usr/bin/python3 /work/benchclone/build/bench/heap_churn.py 3 25000
child python_pymalloc: LD_PRELOAD=/work/benchclone/build/libmemspace.so /usr/bin/python3 /work/benchclone/build/bench/heap_churn.py 3 25000
child python_pymalloc: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /usr/bin/python3 /work/benchclone/build/bench/heap_churn.py 3 25000
child python_pymalloc: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2 /usr/bin/python3 /work/benchclone/build/bench/heap_churn.py 3 25000
child python_pymalloc: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 /usr/bin/python3 /work/benchclone/build/bench/heap_churn.py 3 25000
child python_pymalloc: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtbbmalloc_proxy.so.2 /usr/bin/python3 /work/benchclone/build/bench/heap_churn.py 3 25000
child python_malloc: PYTHONMALLOC=malloc /usr/bin/python3 /work/benchclone/build/bench/heap_churn.py 3 25000
child python_malloc: LD_PRELOAD=/work/benchclone/build/libmemspace.so PYTHONMALLOC=malloc /usr/bin/python3 /work/benchclone/build/bench/heap_churn.py 3 25000
child python_malloc: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 PYTHONMALLOC=malloc /usr/bin/python3 /work/benchclone/build/bench/heap_churn.py 3 25000
child python_malloc: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2 PYTHONMALLOC=malloc /usr/bin/python3 /work/benchclone/build/bench/heap_churn.py 3 25000
child python_malloc: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 PYTHONMALLOC=malloc /usr/bin/python3 /work/benchclone/build/bench/heap_churn.py 3 25000
child python_malloc: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtbbmalloc_proxy.so.2 PYTHONMALLOC=malloc /usr/bin/python3 /work/benchclone/build/bench/heap_churn.py 3 25000
child sqlite3: /usr/bin/sqlite3 -bail /tmp/memspace-bench-heap-aeHoN3/bench.db .read /tmp/memspace-bench-heap-aeHoN3/build.sql
child sqlite3: LD_PRELOAD=/work/benchclone/build/libmemspace.so /usr/bin/sqlite3 -bail /tmp/memspace-bench-heap-aeHoN3/bench.db .read /tmp/memspace-bench-heap-aeHoN3/build.sql
child sqlite3: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /usr/bin/sqlite3 -bail /tmp/memspace-bench-heap-aeHoN3/bench.db .read /tmp/memspace-bench-heap-aeHoN3/build.sql
child sqlite3: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2 /usr/bin/sqlite3 -bail /tmp/memspace-bench-heap-aeHoN3/bench.db .read /tmp/memspace-bench-heap-aeHoN3/build.sql
child sqlite3: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 /usr/bin/sqlite3 -bail /tmp/memspace-bench-heap-aeHoN3/bench.db .read /tmp/memspace-bench-heap-aeHoN3/build.sql
child sqlite3: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtbbmalloc_proxy.so.2 /usr/bin/sqlite3 -bail /tmp/memspace-bench-heap-aeHoN3/bench.db .read /tmp/memspace-bench-heap-aeHoN3/build.sql
child gcc: /usr/bin/gcc -O2 -c /tmp/memspace-bench-heap-aeHoN3/generated.c -o /tmp/memspace-bench-heap-aeHoN3/generated.o
child gcc: LD_PRELOAD=/work/benchclone/build/libmemspace.so /usr/bin/gcc -O2 -c /tmp/memspace-bench-heap-aeHoN3/generated.c -o /tmp/memspace-bench-heap-aeHoN3/generated.o
child gcc: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /usr/bin/gcc -O2 -c /tmp/memspace-bench-heap-aeHoN3/generated.c -o /tmp/memspace-bench-heap-aeHoN3/generated.o
child gcc: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2 /usr/bin/gcc -O2 -c /tmp/memspace-bench-heap-aeHoN3/generated.c -o /tmp/memspace-bench-heap-aeHoN3/generated.o
child gcc: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 /usr/bin/gcc -O2 -c /tmp/memspace-bench-heap-aeHoN3/generated.c -o /tmp/memspace-bench-heap-aeHoN3/generated.o
child gcc: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtbbmalloc_proxy.so.2 /usr/bin/gcc -O2 -c /tmp/memspace-bench-heap-aeHoN3/generated.c -o /tmp/memspace-bench-heap-aeHoN3/generated.o
child realloc_step_1m: /work/benchclone/build/bench/heap_realloc_grow --step 1048576 --max 1073741824 --limit-s 1.5
child realloc_step_1m: LD_PRELOAD=/work/benchclone/build/libmemspace.so /work/benchclone/build/bench/heap_realloc_grow --step 1048576 --max 1073741824 --limit-s 1.5
child realloc_step_1m: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /work/benchclone/build/bench/heap_realloc_grow --step 1048576 --max 1073741824 --limit-s 1.5
child realloc_step_1m: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2 /work/benchclone/build/bench/heap_realloc_grow --step 1048576 --max 1073741824 --limit-s 1.5
child realloc_step_1m: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 /work/benchclone/build/bench/heap_realloc_grow --step 1048576 --max 1073741824 --limit-s 1.5
child realloc_step_1m: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtbbmalloc_proxy.so.2 /work/benchclone/build/bench/heap_realloc_grow --step 1048576 --max 1073741824 --limit-s 1.5
child realloc_double: /work/benchclone/build/bench/heap_realloc_grow --double --start 1048576 --max 1073741824 --limit-s 1.5
child realloc_double: LD_PRELOAD=/work/benchclone/build/libmemspace.so /work/benchclone/build/bench/heap_realloc_grow --double --start 1048576 --max 1073741824 --limit-s 1.5
child realloc_double: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /work/benchclone/build/bench/heap_realloc_grow --double --start 1048576 --max 1073741824 --limit-s 1.5
child realloc_double: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2 /work/benchclone/build/bench/heap_realloc_grow --double --start 1048576 --max 1073741824 --limit-s 1.5
child realloc_double: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 /work/benchclone/build/bench/heap_realloc_grow --double --start 1048576 --max 1073741824 --limit-s 1.5
child realloc_double: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtbbmalloc_proxy.so.2 /work/benchclone/build/bench/heap_realloc_grow --double --start 1048576 --max 1073741824 --limit-s 1.5
seconds: 483.2
exit: 0
