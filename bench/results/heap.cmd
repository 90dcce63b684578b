command: build/memspace bench all
part: heap
mode: default
date: 2026-11-29T20:02:57Z
environment:
host: free page reporting min_free_ms=300000 (was 0) max_waiting_mib=65536 (was 1024)
machine: cpu="AMD EPYC" cores=2 memory_bytes=25276059648 kernel="Linux 6.18.44-fc-v857" arch=x86_64
libraries: glibc=2.36 memspace=0.1.0 jemalloc=5.3.0-1 mimalloc=2.0.9+ds-2 tcmalloc=2.10-1 tbbmalloc=2021.8.0-2+deb12u1
heap parameters: rounds=1 warmup=2 loops=3 long_rounds=5 long_loops=30 long_threads=2 blocks=150000 ops=75000 sizes=16..16000(linear falloff) idle_ms=1000 short_window=targets runs=5 prog_goal_s=5 prog_runs_max=10 py_waves=1 py_n=25000 np_rounds=30 sql_rows=400000 gcc_funcs=35 shell_cmds=150 git_files=500 http_requests=60 r_n=4000 realloc_max=1073741824 realloc_limit_s=1.5 realloc_runs=3 realloc_double_runs=1 cgroup_peers=0
child rptest: /work/benchclone/build/bench/heap_rptest --threads 1 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 1000
child rptest: LD_PRELOAD=/work/benchclone/build/libmemspace.so MEMSPACE_CACHE=unlimited /work/benchclone/build/bench/heap_rptest --threads 1 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 1000
child rptest: LD_PRELOAD=/work/benchclone/build/libmemspace.so MEMSPACE_CACHE=performance /work/benchclone/build/bench/heap_rptest --threads 1 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 1000
child rptest: LD_PRELOAD=/work/benchclone/build/libmemspace.so MEMSPACE_CACHE=size /work/benchclone/build/bench/heap_rptest --threads 1 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 1000
child rptest: LD_PRELOAD=/work/benchclone/build/libmemspace.so MEMSPACE_CACHE=none /work/benchclone/build/bench/heap_rptest --threads 1 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 1000
child rptest: LD_PRELOAD=/work/benchclone/build/secure/libmemspace.so /work/benchclone/build/bench/heap_rptest --threads 1 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 1000
child rptest: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /work/benchclone/build/bench/heap_rptest --threads 1 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 1000
child rptest: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2 /work/benchclone/build/bench/heap_rptest --threads 1 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 1000
child rptest: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 /work/benchclone/build/bench/heap_rptest --threads 1 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 1000
child rptest: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtbbmalloc_proxy.so.2 /work/benchclone/build/bench/heap_rptest --threads 1 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 1000
child rptest: /work/benchclone/build/bench/heap_rptest --threads 2 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 0
child rptest: LD_PRELOAD=/work/benchclone/build/libmemspace.so MEMSPACE_CACHE=performance /work/benchclone/build/bench/heap_rptest --threads 2 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 1000
child rptest: LD_PRELOAD=/work/benchclone/build/libmemspace.so MEMSPACE_CACHE=none /work/benchclone/build/bench/heap_rptest --threads 2 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 0
child rptest: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /work/benchclone/build/bench/heap_rptest --threads 2 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 0
child rptest: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2 /work/benchclone/build/bench/heap_rptest --threads 2 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 0
child rptest: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 /work/benchclone/build/bench/heap_rptest --threads 2 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 0
child rptest: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtbbmalloc_proxy.so.2 /work/benchclone/build/bench/heap_rptest --threads 2 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 0
child rptest: /work/benchclone/build/bench/heap_rptest --threads 4 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 0
child rptest: LD_PRELOAD=/work/benchclone/build/libmemspace.so MEMSPACE_CACHE=performance /work/benchclone/build/bench/heap_rptest --threads 4 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 1000
child rptest: LD_PRELOAD=/work/benchclone/build/libmemspace.so MEMSPACE_CACHE=none /work/benchclone/build/bench/heap_rptest --threads 4 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 0
child rptest_cross: /work/benchclone/build/bench/heap_rptest --threads 2 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 0 --cross
child rptest_cross: LD_PRELOAD=/work/benchclone/build/libmemspace.so MEMSPACE_CACHE=performance /work/benchclone/build/bench/heap_rptest --threads 2 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 0 --cross
child rptest_cross: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /work/benchclone/build/bench/heap_rptest --threads 2 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 0 --cross
child rptest_cross: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2 /work/benchclone/build/bench/heap_rptest --threads 2 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 0 --cross
child rptest_cross: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 /work/benchclone/build/bench/heap_rptest --threads 2 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 0 --cross
child rptest_cross: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtbbmalloc_proxy.so.2 /work/benchclone/build/bench/heap_rptest --threads 2 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 0 --cross
section rptest: 40.0 s
child rptest_long: /work/benchclone/build/bench/heap_rptest --threads 1 --warmup 0 --loops 30 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 0
child rptest_long: LD_PRELOAD=/work/benchclone/build/libmemspace.so MEMSPACE_CACHE=performance /work/benchclone/build/bench/heap_rptest --threads 1 --warmup 0 --loops 30 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 0
child rptest_long: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /work/benchclone/build/bench/heap_rptest --threads 1 --warmup 0 --loops 30 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 0
child rptest_long: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2 /work/benchclone/build/bench/heap_rptest --threads 1 --warmup 0 --loops 30 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 0
child rptest_long: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 /work/benchclone/build/bench/heap_rptest --threads 1 --warmup 0 --loops 30 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 0
child rptest_long: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtbbmalloc_proxy.so.2 /work/benchclone/build/bench/heap_rptest --threads 1 --warmup 0 --loops 30 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 0
child rptest_long: /work/benchclone/build/bench/heap_rptest --threads 2 --warmup 0 --loops 30 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 0
child rptest_long: LD_PRELOAD=/work/benchclone/build/libmemspace.so MEMSPACE_CACHE=performance /work/benchclone/build/bench/heap_rptest --threads 2 --warmup 0 --loops 30 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 0
child rptest_long: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /work/benchclone/build/bench/heap_rptest --threads 2 --warmup 0 --loops 30 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 0
child rptest_long: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2 /work/benchclone/build/bench/heap_rptest --threads 2 --warmup 0 --loops 30 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 0
child rptest_long: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 /work/benchclone/build/bench/heap_rptest --threads 2 --warmup 0 --loops 30 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 0
child rptest_long: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtbbmalloc_proxy.so.2 /work/benchclone/build/bench/heap_rptest --threads 2 --warmup 0 --loops 30 --blocks 150000 --ops 75000 --min 16 --max 16000 --idle-ms 0
section rptest_long: 151.4 s
heap program runs: python_pymalloc=10 python_malloc=10 python_numpy=8 sqlite3=6 gcc=10 shell=10 git=10 shell_script=10 http_server=10 rscript=10 (glibc, memspace, preload-floor, mimalloc; the others 5)
child python_pymalloc: /usr/bin/python3 /work/benchclone/build/bench/heap_churn.py 1 25000
child python_pymalloc: LD_PRELOAD=/work/benchclone/build/libmemspace.so /usr/bin/python3 /work/benchclone/build/bench/heap_churn.py 1 25000
child python_pymalloc: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /usr/bin/python3 /work/benchclone/build/bench/heap_churn.py 1 25000
child python_pymalloc: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2 /usr/bin/python3 /work/benchclone/build/bench/heap_churn.py 1 25000
child python_pymalloc: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 /usr/bin/python3 /work/benchclone/build/bench/heap_churn.py 1 25000
child python_pymalloc: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtbbmalloc_proxy.so.2 /usr/bin/python3 /work/benchclone/build/bench/heap_churn.py 1 25000
child python_pymalloc: LD_PRELOAD=/work/benchclone/build/bench/libheap_floor.so /usr/bin/python3 /work/benchclone/build/bench/heap_churn.py 1 25000
child python_malloc: PYTHONMALLOC=malloc /usr/bin/python3 /work/benchclone/build/bench/heap_churn.py 1 25000
child python_malloc: LD_PRELOAD=/work/benchclone/build/libmemspace.so PYTHONMALLOC=malloc /usr/bin/python3 /work/benchclone/build/bench/heap_churn.py 1 25000
child python_malloc: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 PYTHONMALLOC=malloc /usr/bin/python3 /work/benchclone/build/bench/heap_churn.py 1 25000
child python_malloc: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2 PYTHONMALLOC=malloc /usr/bin/python3 /work/benchclone/build/bench/heap_churn.py 1 25000
child python_malloc: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 PYTHONMALLOC=malloc /usr/bin/python3 /work/benchclone/build/bench/heap_churn.py 1 25000
child python_malloc: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtbbmalloc_proxy.so.2 PYTHONMALLOC=malloc /usr/bin/python3 /work/benchclone/build/bench/heap_churn.py 1 25000
child python_malloc: LD_PRELOAD=/work/benchclone/build/bench/libheap_floor.so PYTHONMALLOC=malloc /usr/bin/python3 /work/benchclone/build/bench/heap_churn.py 1 25000
child python_numpy: /usr/bin/python3 /work/benchclone/build/bench/heap_numpy_churn.py 30
child python_numpy: LD_PRELOAD=/work/benchclone/build/libmemspace.so /usr/bin/python3 /work/benchclone/build/bench/heap_numpy_churn.py 30
child python_numpy: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /usr/bin/python3 /work/benchclone/build/bench/heap_numpy_churn.py 30
child python_numpy: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2 /usr/bin/python3 /work/benchclone/build/bench/heap_numpy_churn.py 30
child python_numpy: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 /usr/bin/python3 /work/benchclone/build/bench/heap_numpy_churn.py 30
child python_numpy: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtbbmalloc_proxy.so.2 /usr/bin/python3 /work/benchclone/build/bench/heap_numpy_churn.py 30
child python_numpy: LD_PRELOAD=/work/benchclone/build/bench/libheap_floor.so /usr/bin/python3 /work/benchclone/build/bench/heap_numpy_churn.py 30
child sqlite3: /usr/bin/sqlite3 -bail /dev/shm/memspace-bench-heap-lm3R4h/bench.db .read /dev/shm/memspace-bench-heap-lm3R4h/build.sql
child sqlite3: LD_PRELOAD=/work/benchclone/build/libmemspace.so /usr/bin/sqlite3 -bail /dev/shm/memspace-bench-heap-lm3R4h/bench.db .read /dev/shm/memspace-bench-heap-lm3R4h/build.sql
child sqlite3: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /usr/bin/sqlite3 -bail /dev/shm/memspace-bench-heap-lm3R4h/bench.db .read /dev/shm/memspace-bench-heap-lm3R4h/build.sql
child sqlite3: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2 /usr/bin/sqlite3 -bail /dev/shm/memspace-bench-heap-lm3R4h/bench.db .read /dev/shm/memspace-bench-heap-lm3R4h/build.sql
child sqlite3: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 /usr/bin/sqlite3 -bail /dev/shm/memspace-bench-heap-lm3R4h/bench.db .read /dev/shm/memspace-bench-heap-lm3R4h/build.sql
child sqlite3: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtbbmalloc_proxy.so.2 /usr/bin/sqlite3 -bail /dev/shm/memspace-bench-heap-lm3R4h/bench.db .read /dev/shm/memspace-bench-heap-lm3R4h/build.sql
child sqlite3: LD_PRELOAD=/work/benchclone/build/bench/libheap_floor.so /usr/bin/sqlite3 -bail /dev/shm/memspace-bench-heap-lm3R4h/bench.db .read /dev/shm/memspace-bench-heap-lm3R4h/build.sql
child gcc: /usr/bin/gcc -O2 -c /dev/shm/memspace-bench-heap-lm3R4h/generated.c -o /dev/shm/memspace-bench-heap-lm3R4h/generated.o
child gcc: LD_PRELOAD=/work/benchclone/build/libmemspace.so /usr/bin/gcc -O2 -c /dev/shm/memspace-bench-heap-lm3R4h/generated.c -o /dev/shm/memspace-bench-heap-lm3R4h/generated.o
child gcc: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /usr/bin/gcc -O2 -c /dev/shm/memspace-bench-heap-lm3R4h/generated.c -o /dev/shm/memspace-bench-heap-lm3R4h/generated.o
child gcc: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2 /usr/bin/gcc -O2 -c /dev/shm/memspace-bench-heap-lm3R4h/generated.c -o /dev/shm/memspace-bench-heap-lm3R4h/generated.o
child gcc: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 /usr/bin/gcc -O2 -c /dev/shm/memspace-bench-heap-lm3R4h/generated.c -o /dev/shm/memspace-bench-heap-lm3R4h/generated.o
child gcc: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtbbmalloc_proxy.so.2 /usr/bin/gcc -O2 -c /dev/shm/memspace-bench-heap-lm3R4h/generated.c -o /dev/shm/memspace-bench-heap-lm3R4h/generated.o
child gcc: LD_PRELOAD=/work/benchclone/build/bench/libheap_floor.so /usr/bin/gcc -O2 -c /dev/shm/memspace-bench-heap-lm3R4h/generated.c -o /dev/shm/memspace-bench-heap-lm3R4h/generated.o
child shell: /bin/sh -c i=0; while [ $i -lt 150 ]; do /bin/true; i=$((i+1)); done; echo $i
child shell: LD_PRELOAD=/work/benchclone/build/libmemspace.so /bin/sh -c i=0; while [ $i -lt 150 ]; do /bin/true; i=$((i+1)); done; echo $i
child shell: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /bin/sh -c i=0; while [ $i -lt 150 ]; do /bin/true; i=$((i+1)); done; echo $i
child shell: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2 /bin/sh -c i=0; while [ $i -lt 150 ]; do /bin/true; i=$((i+1)); done; echo $i
child shell: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 /bin/sh -c i=0; while [ $i -lt 150 ]; do /bin/true; i=$((i+1)); done; echo $i
child shell: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtbbmalloc_proxy.so.2 /bin/sh -c i=0; while [ $i -lt 150 ]; do /bin/true; i=$((i+1)); done; echo $i
child shell: LD_PRELOAD=/work/benchclone/build/bench/libheap_floor.so /bin/sh -c i=0; while [ $i -lt 150 ]; do /bin/true; i=$((i+1)); done; echo $i
child git: /bin/sh -c cd '/dev/shm/memspace-bench-heap-lm3R4h/tree' && export HOME='/dev/shm/memspace-bench-heap-lm3R4h' GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_AUTHOR_NAME=b GIT_AUTHOR_EMAIL=b@example.com GIT_COMMITTER_NAME=b GIT_COMMITTER_EMAIL=b@example.com GIT_AUTHOR_DATE='2026-01-01T00:00:00Z' GIT_COMMITTER_DATE='2026-01-01T00:00:00Z' && rm -rf .git mod && git -c init.defaultBranch=main init -q && git add -A && git commit -q -m base && mkdir mod && i=0 && while [ $i -lt 10 ]; do echo "change $i" > mod/f$i && git add -A && git commit -q -m "c $i" || exit 1; i=$((i + 1)); done && git status --short | wc -l && git log -p | wc -l && git rev-parse HEAD
child git: LD_PRELOAD=/work/benchclone/build/libmemspace.so /bin/sh -c cd '/dev/shm/memspace-bench-heap-lm3R4h/tree' && export HOME='/dev/shm/memspace-bench-heap-lm3R4h' GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_AUTHOR_NAME=b GIT_AUTHOR_EMAIL=b@example.com GIT_COMMITTER_NAME=b GIT_COMMITTER_EMAIL=b@example.com GIT_AUTHOR_DATE='2026-01-01T00:00:00Z' GIT_COMMITTER_DATE='2026-01-01T00:00:00Z' && rm -rf .git mod && git -c init.defaultBranch=main init -q && git add -A && git commit -q -m base && mkdir mod && i=0 && while [ $i -lt 10 ]; do echo "change $i" > mod/f$i && git add -A && git commit -q -m "c $i" || exit 1; i=$((i + 1)); done && git status --short | wc -l && git log -p | wc -l && git rev-parse HEAD
child git: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /bin/sh -c cd '/dev/shm/memspace-bench-heap-lm3R4h/tree' && export HOME='/dev/shm/memspace-bench-heap-lm3R4h' GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_AUTHOR_NAME=b GIT_AUTHOR_EMAIL=b@example.com GIT_COMMITTER_NAME=b GIT_COMMITTER_EMAIL=b@example.com GIT_AUTHOR_DATE='2026-01-01T00:00:00Z' GIT_COMMITTER_DATE='2026-01-01T00:00:00Z' && rm -rf .git mod && git -c init.defaultBranch=main init -q && git add -A && git commit -q -m base && mkdir mod && i=0 && while [ $i -lt 10 ]; do echo "change $i" > mod/f$i && git add -A && git commit -q -m "c $i" || exit 1; i=$((i + 1)); done && git status --short | wc -l && git log -p | wc -l && git rev-parse HEAD
child git: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2 /bin/sh -c cd '/dev/shm/memspace-bench-heap-lm3R4h/tree' && export HOME='/dev/shm/memspace-bench-heap-lm3R4h' GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_AUTHOR_NAME=b GIT_AUTHOR_EMAIL=b@example.com GIT_COMMITTER_NAME=b GIT_COMMITTER_EMAIL=b@example.com GIT_AUTHOR_DATE='2026-01-01T00:00:00Z' GIT_COMMITTER_DATE='2026-01-01T00:00:00Z' && rm -rf .git mod && git -c init.defaultBranch=main init -q && git add -A && git commit -q -m base && mkdir mod && i=0 && while [ $i -lt 10 ]; do echo "change $i" > mod/f$i && git add -A && git commit -q -m "c $i" || exit 1; i=$((i + 1)); done && git status --short | wc -l && git log -p | wc -l && git rev-parse HEAD
child git: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 /bin/sh -c cd '/dev/shm/memspace-bench-heap-lm3R4h/tree' && export HOME='/dev/shm/memspace-bench-heap-lm3R4h' GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_AUTHOR_NAME=b GIT_AUTHOR_EMAIL=b@example.com GIT_COMMITTER_NAME=b GIT_COMMITTER_EMAIL=b@example.com GIT_AUTHOR_DATE='2026-01-01T00:00:00Z' GIT_COMMITTER_DATE='2026-01-01T00:00:00Z' && rm -rf .git mod && git -c init.defaultBranch=main init -q && git add -A && git commit -q -m base && mkdir mod && i=0 && while [ $i -lt 10 ]; do echo "change $i" > mod/f$i && git add -A && git commit -q -m "c $i" || exit 1; i=$((i + 1)); done && git status --short | wc -l && git log -p | wc -l && git rev-parse HEAD
child git: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtbbmalloc_proxy.so.2 /bin/sh -c cd '/dev/shm/memspace-bench-heap-lm3R4h/tree' && export HOME='/dev/shm/memspace-bench-heap-lm3R4h' GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_AUTHOR_NAME=b GIT_AUTHOR_EMAIL=b@example.com GIT_COMMITTER_NAME=b GIT_COMMITTER_EMAIL=b@example.com GIT_AUTHOR_DATE='2026-01-01T00:00:00Z' GIT_COMMITTER_DATE='2026-01-01T00:00:00Z' && rm -rf .git mod && git -c init.defaultBranch=main init -q && git add -A && git commit -q -m base && mkdir mod && i=0 && while [ $i -lt 10 ]; do echo "change $i" > mod/f$i && git add -A && git commit -q -m "c $i" || exit 1; i=$((i + 1)); done && git status --short | wc -l && git log -p | wc -l && git rev-parse HEAD
child git: LD_PRELOAD=/work/benchclone/build/bench/libheap_floor.so /bin/sh -c cd '/dev/shm/memspace-bench-heap-lm3R4h/tree' && export HOME='/dev/shm/memspace-bench-heap-lm3R4h' GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_AUTHOR_NAME=b GIT_AUTHOR_EMAIL=b@example.com GIT_COMMITTER_NAME=b GIT_COMMITTER_EMAIL=b@example.com GIT_AUTHOR_DATE='2026-01-01T00:00:00Z' GIT_COMMITTER_DATE='2026-01-01T00:00:00Z' && rm -rf .git mod && git -c init.defaultBranch=main init -q && git add -A && git commit -q -m base && mkdir mod && i=0 && while [ $i -lt 10 ]; do echo "change $i" > mod/f$i && git add -A && git commit -q -m "c $i" || exit 1; i=$((i + 1)); done && git status --short | wc -l && git log -p | wc -l && git rev-parse HEAD
child shell_script: /bin/sh /dev/shm/memspace-bench-heap-lm3R4h/script.sh
child shell_script: LD_PRELOAD=/work/benchclone/build/libmemspace.so /bin/sh /dev/shm/memspace-bench-heap-lm3R4h/script.sh
child shell_script: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /bin/sh /dev/shm/memspace-bench-heap-lm3R4h/script.sh
child shell_script: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2 /bin/sh /dev/shm/memspace-bench-heap-lm3R4h/script.sh
child shell_script: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 /bin/sh /dev/shm/memspace-bench-heap-lm3R4h/script.sh
child shell_script: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtbbmalloc_proxy.so.2 /bin/sh /dev/shm/memspace-bench-heap-lm3R4h/script.sh
child shell_script: LD_PRELOAD=/work/benchclone/build/bench/libheap_floor.so /bin/sh /dev/shm/memspace-bench-heap-lm3R4h/script.sh
child http_server: /usr/bin/python3 /work/benchclone/build/bench/heap_http_load.py 60
child http_server: LD_PRELOAD=/work/benchclone/build/libmemspace.so /usr/bin/python3 /work/benchclone/build/bench/heap_http_load.py 60
child http_server: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /usr/bin/python3 /work/benchclone/build/bench/heap_http_load.py 60
child http_server: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2 /usr/bin/python3 /work/benchclone/build/bench/heap_http_load.py 60
child http_server: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 /usr/bin/python3 /work/benchclone/build/bench/heap_http_load.py 60
child http_server: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtbbmalloc_proxy.so.2 /usr/bin/python3 /work/benchclone/build/bench/heap_http_load.py 60
child http_server: LD_PRELOAD=/work/benchclone/build/bench/libheap_floor.so /usr/bin/python3 /work/benchclone/build/bench/heap_http_load.py 60
child rscript: /usr/bin/Rscript --vanilla /work/benchclone/build/bench/heap_r_growth.R 4000
child rscript: LD_PRELOAD=/work/benchclone/build/libmemspace.so /usr/bin/Rscript --vanilla /work/benchclone/build/bench/heap_r_growth.R 4000
child rscript: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /usr/bin/Rscript --vanilla /work/benchclone/build/bench/heap_r_growth.R 4000
child rscript: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2 /usr/bin/Rscript --vanilla /work/benchclone/build/bench/heap_r_growth.R 4000
child rscript: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 /usr/bin/Rscript --vanilla /work/benchclone/build/bench/heap_r_growth.R 4000
child rscript: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtbbmalloc_proxy.so.2 /usr/bin/Rscript --vanilla /work/benchclone/build/bench/heap_r_growth.R 4000
child rscript: LD_PRELOAD=/work/benchclone/build/bench/libheap_floor.so /usr/bin/Rscript --vanilla /work/benchclone/build/bench/heap_r_growth.R 4000
section programs: 165.6 s
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
section realloc: 16.0 s
heap workloads: rounds=5 threads=2 scales=larson:6,xmalloc:2,cache_scratch:5,cache_thrash:5,mstress:1.6,glibc_simple:6,glibc_thread:5,sh6bench:6,sh8bench:1.5,alloc_test:3.5,cxx_map:4,malloc_large:0.4
child larson: /work/benchclone/build/bench/heap_larson --threads 2 --scale 6
child larson: LD_PRELOAD=/work/benchclone/build/libmemspace.so /work/benchclone/build/bench/heap_larson --threads 2 --scale 6
child larson: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /work/benchclone/build/bench/heap_larson --threads 2 --scale 6
child larson: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2 /work/benchclone/build/bench/heap_larson --threads 2 --scale 6
child larson: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 /work/benchclone/build/bench/heap_larson --threads 2 --scale 6
child larson: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtbbmalloc_proxy.so.2 /work/benchclone/build/bench/heap_larson --threads 2 --scale 6
child xmalloc: LD_PRELOAD=/work/benchclone/build/libmemspace.so /work/benchclone/build/bench/heap_xmalloc --threads 2 --scale 2
child xmalloc: /work/benchclone/build/bench/heap_xmalloc --threads 2 --scale 2
child xmalloc: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtbbmalloc_proxy.so.2 /work/benchclone/build/bench/heap_xmalloc --threads 2 --scale 2
child xmalloc: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 /work/benchclone/build/bench/heap_xmalloc --threads 2 --scale 2
child xmalloc: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2 /work/benchclone/build/bench/heap_xmalloc --threads 2 --scale 2
child xmalloc: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /work/benchclone/build/bench/heap_xmalloc --threads 2 --scale 2
child cache_scratch: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /work/benchclone/build/bench/heap_cache_scratch --threads 2 --scale 5
child cache_scratch: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2 /work/benchclone/build/bench/heap_cache_scratch --threads 2 --scale 5
child cache_scratch: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 /work/benchclone/build/bench/heap_cache_scratch --threads 2 --scale 5
child cache_scratch: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtbbmalloc_proxy.so.2 /work/benchclone/build/bench/heap_cache_scratch --threads 2 --scale 5
child cache_scratch: /work/benchclone/build/bench/heap_cache_scratch --threads 2 --scale 5
child cache_scratch: LD_PRELOAD=/work/benchclone/build/libmemspace.so /work/benchclone/build/bench/heap_cache_scratch --threads 2 --scale 5
child cache_thrash: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2 /work/benchclone/build/bench/heap_cache_thrash --threads 2 --scale 5
child cache_thrash: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /work/benchclone/build/bench/heap_cache_thrash --threads 2 --scale 5
child cache_thrash: LD_PRELOAD=/work/benchclone/build/libmemspace.so /work/benchclone/build/bench/heap_cache_thrash --threads 2 --scale 5
child cache_thrash: /work/benchclone/build/bench/heap_cache_thrash --threads 2 --scale 5
child cache_thrash: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtbbmalloc_proxy.so.2 /work/benchclone/build/bench/heap_cache_thrash --threads 2 --scale 5
child cache_thrash: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 /work/benchclone/build/bench/heap_cache_thrash --threads 2 --scale 5
child mstress: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 /work/benchclone/build/bench/heap_mstress --threads 2 --scale 1.6
child mstress: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtbbmalloc_proxy.so.2 /work/benchclone/build/bench/heap_mstress --threads 2 --scale 1.6
child mstress: /work/benchclone/build/bench/heap_mstress --threads 2 --scale 1.6
child mstress: LD_PRELOAD=/work/benchclone/build/libmemspace.so /work/benchclone/build/bench/heap_mstress --threads 2 --scale 1.6
child mstress: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /work/benchclone/build/bench/heap_mstress --threads 2 --scale 1.6
child mstress: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2 /work/benchclone/build/bench/heap_mstress --threads 2 --scale 1.6
child glibc_simple: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtbbmalloc_proxy.so.2 /work/benchclone/build/bench/heap_glibc_simple --threads 1 --scale 6
child glibc_simple: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 /work/benchclone/build/bench/heap_glibc_simple --threads 1 --scale 6
child glibc_simple: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2 /work/benchclone/build/bench/heap_glibc_simple --threads 1 --scale 6
child glibc_simple: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /work/benchclone/build/bench/heap_glibc_simple --threads 1 --scale 6
child glibc_simple: LD_PRELOAD=/work/benchclone/build/libmemspace.so /work/benchclone/build/bench/heap_glibc_simple --threads 1 --scale 6
child glibc_simple: /work/benchclone/build/bench/heap_glibc_simple --threads 1 --scale 6
child glibc_thread: /work/benchclone/build/bench/heap_glibc_thread --threads 2 --scale 5
child glibc_thread: LD_PRELOAD=/work/benchclone/build/libmemspace.so /work/benchclone/build/bench/heap_glibc_thread --threads 2 --scale 5
child glibc_thread: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /work/benchclone/build/bench/heap_glibc_thread --threads 2 --scale 5
child glibc_thread: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2 /work/benchclone/build/bench/heap_glibc_thread --threads 2 --scale 5
child glibc_thread: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 /work/benchclone/build/bench/heap_glibc_thread --threads 2 --scale 5
child glibc_thread: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtbbmalloc_proxy.so.2 /work/benchclone/build/bench/heap_glibc_thread --threads 2 --scale 5
child sh6bench: LD_PRELOAD=/work/benchclone/build/libmemspace.so /work/benchclone/build/bench/heap_sh6bench --threads 2 --scale 6
child sh6bench: /work/benchclone/build/bench/heap_sh6bench --threads 2 --scale 6
child sh6bench: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtbbmalloc_proxy.so.2 /work/benchclone/build/bench/heap_sh6bench --threads 2 --scale 6
child sh6bench: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 /work/benchclone/build/bench/heap_sh6bench --threads 2 --scale 6
child sh6bench: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2 /work/benchclone/build/bench/heap_sh6bench --threads 2 --scale 6
child sh6bench: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /work/benchclone/build/bench/heap_sh6bench --threads 2 --scale 6
child sh8bench: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /work/benchclone/build/bench/heap_sh8bench --threads 2 --scale 1.5
child sh8bench: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2 /work/benchclone/build/bench/heap_sh8bench --threads 2 --scale 1.5
child sh8bench: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 /work/benchclone/build/bench/heap_sh8bench --threads 2 --scale 1.5
child sh8bench: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtbbmalloc_proxy.so.2 /work/benchclone/build/bench/heap_sh8bench --threads 2 --scale 1.5
child sh8bench: /work/benchclone/build/bench/heap_sh8bench --threads 2 --scale 1.5
child sh8bench: LD_PRELOAD=/work/benchclone/build/libmemspace.so /work/benchclone/build/bench/heap_sh8bench --threads 2 --scale 1.5
child alloc_test: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2 /work/benchclone/build/bench/heap_alloc_test --threads 2 --scale 3.5
child alloc_test: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /work/benchclone/build/bench/heap_alloc_test --threads 2 --scale 3.5
child alloc_test: LD_PRELOAD=/work/benchclone/build/libmemspace.so /work/benchclone/build/bench/heap_alloc_test --threads 2 --scale 3.5
child alloc_test: /work/benchclone/build/bench/heap_alloc_test --threads 2 --scale 3.5
child alloc_test: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtbbmalloc_proxy.so.2 /work/benchclone/build/bench/heap_alloc_test --threads 2 --scale 3.5
child alloc_test: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 /work/benchclone/build/bench/heap_alloc_test --threads 2 --scale 3.5
child cxx_map: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 /work/benchclone/build/bench/heap_cxx_map --threads 2 --scale 4
child cxx_map: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtbbmalloc_proxy.so.2 /work/benchclone/build/bench/heap_cxx_map --threads 2 --scale 4
child cxx_map: /work/benchclone/build/bench/heap_cxx_map --threads 2 --scale 4
child cxx_map: LD_PRELOAD=/work/benchclone/build/libmemspace.so /work/benchclone/build/bench/heap_cxx_map --threads 2 --scale 4
child cxx_map: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /work/benchclone/build/bench/heap_cxx_map --threads 2 --scale 4
child cxx_map: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2 /work/benchclone/build/bench/heap_cxx_map --threads 2 --scale 4
child malloc_large: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtbbmalloc_proxy.so.2 /work/benchclone/build/bench/heap_malloc_large --threads 1 --scale 0.4
child malloc_large: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 /work/benchclone/build/bench/heap_malloc_large --threads 1 --scale 0.4
child malloc_large: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2 /work/benchclone/build/bench/heap_malloc_large --threads 1 --scale 0.4
child malloc_large: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /work/benchclone/build/bench/heap_malloc_large --threads 1 --scale 0.4
child malloc_large: LD_PRELOAD=/work/benchclone/build/libmemspace.so /work/benchclone/build/bench/heap_malloc_large --threads 1 --scale 0.4
child malloc_large: /work/benchclone/build/bench/heap_malloc_large --threads 1 --scale 0.4
section workloads: 419.9 s
child cgroup_purge: /work/benchclone/build/bench/heap_cgroup_purge
child cgroup_purge: LD_PRELOAD=/work/benchclone/build/libmemspace.so /work/benchclone/build/bench/heap_cgroup_purge
section cgroup: 16.5 s
seconds: 809.5
exit: 0
