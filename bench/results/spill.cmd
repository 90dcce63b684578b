command: build/memspace bench all
part: spill
mode: default
date: 2026-11-28T05:39:59Z
environment:
machine: cpu="AMD EPYC" cores=2 memory_bytes=25276510208 kernel="Linux 6.18.44-fc-v657" arch=x86_64
libraries: glibc=2.36 memspace=0.1.0 jemalloc=5.3.0-1 mimalloc=2.0.9+ds-2 tcmalloc=2.10-1 tbbmalloc=2021.8.0-2+deb12u1
workload: MSB_LIB='/work/benchclone/build/libmemspace.so' /usr/bin/python3 '/work/benchclone/bench/spill/run.py' default '/work/benchclone/build' 2>&1
section idle: 31.2 s
section busy: 3.4 s
section sweep-plain: 13.2 s
section sweep-spill: 35.0 s
section sweep-swap: 28.6 s
section sweep-auto: 38.0 s
section pairs: 40.1 s
section past: 113.9 s
section midsize: 30.4 s
section file: 17.3 s
seconds: 351.1
exit: 0
