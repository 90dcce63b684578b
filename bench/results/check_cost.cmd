command: bench/heap/check_cost.sh --ref main --runs 7
source: 15bfde834145560b78110c093688ce397fe2b152
ref: main = 5d9485dd507be5344722841ab78cc98c9a832657
checked: /tmp/memspace-check-cost/checked/libmemspace.so; unchecked: /tmp/memspace-check-cost/unchecked/libmemspace.so (-DCMAKE_C_FLAGS=-DMSI_HEAP_LIST_CHECKS=0)
instructions: setarch -R env LD_PRELOAD=LIB valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=FILE CMD
time: flock /tmp/memspace-bench.lock bash -c 'TIMEFORMAT="%3R %3U %3S"; time setarch -R env LD_PRELOAD=LIB CMD', 7 interleaved runs
PYTHONHASHSEED=0 PYTHONMALLOC=malloc
rptest_16_16000: /tmp/memspace-check-cost/checked/bench/heap_rptest --threads 1 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --idle-ms 0 --min 16 --max 16000
rptest_16_256: /tmp/memspace-check-cost/checked/bench/heap_rptest --threads 1 --warmup 2 --loops 3 --blocks 150000 --ops 75000 --idle-ms 0 --min 16 --max 256
python_churn: /root/.pyenv/versions/3.11.7/bin/python3 /tmp/memspace-check-cost/churn.py
sqlite3: sqlite3 :memory: -init /tmp/memspace-check-cost/sql.sql .quit
