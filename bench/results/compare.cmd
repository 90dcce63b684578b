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
summary (B/A of the medians; the range of B/A over the rounds; A's spread: max/min of its rounds):
part   case                t metric                 A median       B median     B/A         B/A range  A spread  better
heap   rptest_long         1 ops_per_cpu_s       3.18417e+06    2.90625e+06   0.913    0.821-1.107        1.170  higher
heap   rptest_long         1 ops_per_s                467389         506062   1.083    0.607-1.693        2.246  higher
heap   rptest_long         1 peak_rss_bytes      6.43191e+08    6.43052e+08   1.000    0.999-1.001        1.001  lower
heap   rptest_long         1 overhead_bytes      3.23957e+07    3.22564e+07   0.996    0.988-1.011        1.021  lower
heap   rptest_long         1 minor_faults             160765         160727   1.000    0.988-1.307        1.034  lower
heap   rptest_long         2 ops_per_cpu_s       2.81225e+06    2.92801e+06   1.041    0.868-1.308        1.376  higher
heap   rptest_long         2 ops_per_s                689627         710174   1.030    0.838-1.861        3.270  higher
heap   rptest_long         2 peak_rss_bytes      1.27978e+09    1.27972e+09   1.000    0.999-1.001        1.002  lower
heap   rptest_long         2 overhead_bytes      6.25919e+07    6.26096e+07   1.000    0.991-1.029        1.034  lower
heap   rptest_long         2 minor_faults             337616         333992   0.989    0.704-1.195        1.457  lower
spaces mixed_malloc        1 mean_ns                    17.5           19.8   1.131    0.897-2.017        1.401  lower
spaces mixed_malloc        1 p50_ns                     10.2           10.2   1.000    1.000-1.961        1.000  lower
spaces mixed_malloc        1 p99_ns                     70.3           70.3   1.000    0.831-1.251        1.333  lower
spaces mixed_free          1 mean_ns                    27.1           30.1   1.111    0.896-1.962        1.467  lower
spaces mixed_free          1 p50_ns                     20.4           20.4   1.000    0.980-1.485        1.515  lower
spaces mixed_free          1 p99_ns                     80.6           90.4   1.122    0.872-1.370        1.716  lower
spaces sizes_fifo_malloc   1 geomean_p50_ns             7.56           6.06   0.802    0.393-2.057        3.679  lower
spaces sizes_fifo_free     1 geomean_p50_ns             5.34            5.2   0.974    0.207-2.367        3.441  lower
spaces spaces_work         1 minor_faults              18171          20050   1.103    1.103-1.104        1.000  lower
spill  spill_fill          1 alloc_s                 8.76626        5.81699   0.664    0.178-3.265       12.756  lower
spill  spill_fill          1 read_ops_per_s      4.74578e+06    5.52378e+06   1.164    0.304-1.680        6.587  higher
spill  spill_fill          1 write_ops_per_s     1.28942e+07    1.61053e+07   1.249    0.448-1.919        2.174  higher
spill  spill_fill          1 minor_faults               6815           6821   1.001    0.939-1.013        1.083  lower
heap   rptest_small        1 instructions         4.3845e+07     4.8781e+07   1.113    1.113-1.113        1.000  lower
