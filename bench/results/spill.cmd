command: build/memspace bench all
part: spill
mode: default
date: 2026-11-28T19:48:09Z
environment:
machine: cpu="Intel(R) Xeon(R) Processor" cores=2 memory_bytes=25276502016 kernel="Linux 6.18.44-fc-v669" arch=x86_64
libraries: glibc=2.36 memspace=0.1.0 jemalloc=5.3.0-1 mimalloc=2.0.9+ds-2 tcmalloc=2.10-1 tbbmalloc=2021.8.0-2+deb12u1
workload: MSB_LIB='/work/benchclone/build/libmemspace.so' /usr/bin/python3 '/work/benchclone/bench/spill/run.py' default '/work/benchclone/build' 2>&1
section idle: 31.1 s
section busy: 3.3 s
section sweep-plain: 9.7 s
section sweep-spill: 23.5 s
section sweep-swap: 16.2 s
section sweep-auto: 24.3 s
section pairs: 51.8 s
section past: 205.7 s
section midsize: 13.8 s
section file: 7.6 s
seconds: 387.0
exit: 0
