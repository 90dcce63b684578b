command: build/memspace bench all
part: spill
mode: default
date: 2026-11-29T12:25:30Z
environment:
host: free page reporting min_free_ms=300000 (was 0) max_waiting_mib=65536 (was 1024)
machine: cpu="Intel(R) Xeon(R) Processor" cores=2 memory_bytes=25276502016 kernel="Linux 6.18.44-fc-v669" arch=x86_64
libraries: glibc=2.36 memspace=0.1.0 jemalloc=5.3.0-1 mimalloc=2.0.9+ds-2 tcmalloc=2.10-1 tbbmalloc=2021.8.0-2+deb12u1
workload: MSB_LIB='/work/benchclone/build/libmemspace.so' /usr/bin/python3 -B '/work/benchclone/bench/spill/run.py' default '/work/benchclone/build' 2>&1
section idle: 31.1 s
section busy: 3.2 s
section sweep-plain: 10.2 s
section sweep-spill: 20.8 s
section sweep-swap: 14.2 s
section sweep-auto: 23.9 s
section pairs: 48.9 s
section past: 260.8 s
section midsize: 16.3 s
section file: 7.4 s
seconds: 436.8
exit: 0
