command: build/memspace bench all
part: pages
mode: default
date: 2026-11-29T20:00:27Z
environment:
host: free page reporting min_free_ms=300000 (was 0) max_waiting_mib=65536 (was 1024)
machine: cpu="AMD EPYC" cores=2 memory_bytes=25276059648 kernel="Linux 6.18.44-fc-v857" arch=x86_64
libraries: glibc=2.36 memspace=0.1.0 jemalloc=5.3.0-1 mimalloc=2.0.9+ds-2 tcmalloc=2.10-1 tbbmalloc=2021.8.0-2+deb12u1
parameters: region_bytes=314572800 rounds=9 (+1 warm-up) frames=120 range_bytes=67108864 frame_bytes=50331648
hugetlb: 2 MiB pages reserved for the run, old count restored after
section map: 39.7 s
section frame_timing: 11.4 s
section frame_rss: 10.2 s
seconds: 61.3
exit: 0
