command: build/memspace bench all
part: spill
mode: default
date: 2026-11-28T22:15:25Z
environment:
machine: cpu="Intel(R) Xeon(R) Processor" cores=2 memory_bytes=25276502016 kernel="Linux 6.18.44-fc-v669" arch=x86_64
libraries: glibc=2.36 memspace=0.1.0 jemalloc=5.3.0-1 mimalloc=2.0.9+ds-2 tcmalloc=2.10-1 tbbmalloc=2021.8.0-2+deb12u1
workload: MSB_LIB='/work/benchclone/build/libmemspace.so' /usr/bin/python3 '/work/benchclone/bench/spill/run.py' default '/work/benchclone/build' 2>&1
section idle: 31.1 s
section busy: 3.2 s
section sweep-plain: 9.9 s
section sweep-spill: 24.2 s
section sweep-swap: 16.7 s
section sweep-auto: 24.2 s
section pairs: 53.0 s
section past: 255.6 s
section midsize: 14.7 s
section file: 7.9 s
seconds: 440.6
exit: 0
