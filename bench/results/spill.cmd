command: build/memspace bench all
part: spill
mode: default
date: 2026-11-29T17:36:05Z
environment:
host: free page reporting min_free_ms=300000 (was 0) max_waiting_mib=65536 (was 1024)
machine: cpu="AMD EPYC" cores=2 memory_bytes=25276059648 kernel="Linux 6.18.44-fc-v857" arch=x86_64
libraries: glibc=2.36 memspace=0.1.0 jemalloc=5.3.0-1 mimalloc=2.0.9+ds-2 tcmalloc=2.10-1 tbbmalloc=2021.8.0-2+deb12u1
workload: MSB_LIB='/work/benchclone/build/libmemspace.so' /usr/bin/python3 -B '/work/benchclone/bench/spill/run.py' default '/work/benchclone/build' 2>&1
section idle: 31.2 s
section busy: 3.3 s
section sweep-plain: 11.8 s
section sweep-spill: 27.2 s
section sweep-swap: 19.0 s
section sweep-auto: 27.8 s
section pairs: 54.2 s
section past: 318.4 s
section midsize: 23.0 s
section file: 9.3 s
seconds: 525.3
exit: 0
