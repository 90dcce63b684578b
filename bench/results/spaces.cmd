command: build/memspace bench all
part: spaces
mode: default
date: 2026-11-29T17:22:28Z
environment:
host: free page reporting min_free_ms=300000 (was 0) max_waiting_mib=65536 (was 1024)
machine: cpu="AMD EPYC" cores=2 memory_bytes=25276059648 kernel="Linux 6.18.44-fc-v857" arch=x86_64
libraries: glibc=2.36 memspace=0.1.0 jemalloc=5.3.0-1 mimalloc=2.0.9+ds-2 tcmalloc=2.10-1 tbbmalloc=2021.8.0-2+deb12u1
child:  /work/benchclone/build/spaces_work_space --seccomp (x3)
section memspace: 2.0 s
child:  /work/benchclone/build/spaces_work_malloc --seccomp (x3)
section glibc: 34.9 s
child:  GLIBC_TUNABLES=...mmap_max=0:trim_threshold=2^62 /work/benchclone/build/spaces_work_malloc --rt --seccomp (x3)
section glibc-rt: 2.1 s
child: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /work/benchclone/build/spaces_work_malloc --seccomp (x3)
section jemalloc: 5.9 s
child: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2 /work/benchclone/build/spaces_work_malloc --seccomp (x3)
section mimalloc: 1.3 s
child: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 /work/benchclone/build/spaces_work_malloc --seccomp (x3)
section tcmalloc: 1.4 s
note: every value is the median of 3 run(s); timer cost subtracted; TSC calibrated
seconds: 47.7
exit: 0
