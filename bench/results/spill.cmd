command: build/memspace bench all
part: spill
mode: default
date: 2026-11-28T09:07:43Z
environment:
machine: cpu="AMD EPYC" cores=2 memory_bytes=25276510208 kernel="Linux 6.18.44-fc-v657" arch=x86_64
libraries: glibc=2.36 memspace=0.1.0 jemalloc=5.3.0-1 mimalloc=2.0.9+ds-2 tcmalloc=2.10-1 tbbmalloc=2021.8.0-2+deb12u1
workload: MSB_LIB='/work/benchclone/build/libmemspace.so' /usr/bin/python3 '/work/benchclone/bench/spill/run.py' default '/work/benchclone/build' 2>&1
section idle: 31.2 s
section busy: 3.4 s
section sweep-plain: 12.7 s
section sweep-spill: 40.8 s
section sweep-swap: 23.6 s
section sweep-auto: 40.2 s
section pairs: 70.7 s
section past: 106.7 s
section midsize: 30.4 s
section file: 14.3 s
seconds: 374.2
exit: 0
