command: build/memspace bench all
part: pages
mode: default
date: 2026-11-28T08:56:06Z
environment:
machine: cpu="AMD EPYC" cores=2 memory_bytes=25276510208 kernel="Linux 6.18.44-fc-v657" arch=x86_64
libraries: glibc=2.36 memspace=0.1.0 jemalloc=5.3.0-1 mimalloc=2.0.9+ds-2 tcmalloc=2.10-1 tbbmalloc=2021.8.0-2+deb12u1
parameters: region_bytes=314572800 rounds=9 (+1 warm-up) frames=120 range_bytes=67108864 frame_bytes=50331648
hugetlb: 2 MiB pages reserved for the run, old count restored after
section map: 60.2 s
section frame_timing: 15.5 s
section frame_rss: 10.6 s
seconds: 86.4
exit: 0
