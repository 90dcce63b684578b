command: build/memspace bench all
part: pages
mode: default
date: 2026-11-28T22:09:30Z
environment:
machine: cpu="Intel(R) Xeon(R) Processor" cores=2 memory_bytes=25276502016 kernel="Linux 6.18.44-fc-v669" arch=x86_64
libraries: glibc=2.36 memspace=0.1.0 jemalloc=5.3.0-1 mimalloc=2.0.9+ds-2 tcmalloc=2.10-1 tbbmalloc=2021.8.0-2+deb12u1
parameters: region_bytes=314572800 rounds=9 (+1 warm-up) frames=120 range_bytes=67108864 frame_bytes=50331648
hugetlb: 2 MiB pages reserved for the run, old count restored after
section map: 22.3 s
section frame_timing: 9.9 s
section frame_rss: 9.5 s
seconds: 41.7
exit: 0
