command: build/memspace bench all
part: spill
mode: default
date: 2026-11-29T20:16:33Z
environment:
host: free page reporting min_free_ms=300000 (was 0) max_waiting_mib=65536 (was 1024)
machine: cpu="AMD EPYC" cores=2 memory_bytes=25276059648 kernel="Linux 6.18.44-fc-v857" arch=x86_64
libraries: glibc=2.36 memspace=0.1.0 jemalloc=5.3.0-1 mimalloc=2.0.9+ds-2 tcmalloc=2.10-1 tbbmalloc=2021.8.0-2+deb12u1
workload: MSB_LIB='/work/benchclone/build/libmemspace.so' /usr/bin/python3 -B '/work/benchclone/bench/spill/run.py' default '/work/benchclone/build' 2>&1
section idle: 31.2 s
section busy: 3.3 s
section sweep-plain: 11.7 s
section sweep-spill: 25.3 s
section sweep-swap: 18.2 s
section sweep-auto: 25.5 s
section pairs: 56.0 s
section past: 270.3 s
section midsize: 22.6 s
section file: 8.6 s
seconds: 472.7
exit: 0
