command: build/memspace bench all
part: spill
mode: default
date: 2026-11-26T10:01:34Z
environment:
machine: cpu="AMD EPYC" cores=2 memory_bytes=25276502016 kernel="Linux 6.18.44-fc-v669" arch=x86_64
libraries: glibc=2.36 memspace=0.1.0 jemalloc=5.3.0-1 mimalloc=2.0.9+ds-2 tcmalloc=2.10-1 tbbmalloc=2021.8.0-2+deb12u1
workload: /usr/bin/python3 '/work/main/bench/spill/run.py' default '/work/main/build' 2>&1
seconds: 214.3
exit: 0
