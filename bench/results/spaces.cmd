command: build/memspace bench all
part: spaces
mode: default
date: 2026-11-29T20:01:30Z
environment:
host: free page reporting min_free_ms=300000 (was 0) max_waiting_mib=65536 (was 1024)
machine: cpu="AMD EPYC" cores=2 memory_bytes=25276059648 kernel="Linux 6.18.44-fc-v857" arch=x86_64
libraries: glibc=2.36 memspace=0.1.0 jemalloc=5.3.0-1 mimalloc=2.0.9+ds-2 tcmalloc=2.10-1 tbbmalloc=2021.8.0-2+deb12u1
child:  /work/benchclone/build/spaces_work_space --seccomp (x5)
child:  /work/benchclone/build/spaces_work_malloc --seccomp (x5)
child:  GLIBC_TUNABLES=...mmap_max=0:trim_threshold=2^62 /work/benchclone/build/spaces_work_malloc --rt --seccomp (x5)
child: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /work/benchclone/build/spaces_work_malloc --seccomp (x5)
child: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2 /work/benchclone/build/spaces_work_malloc --seccomp (x5)
child: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 /work/benchclone/build/spaces_work_malloc --seccomp (x5)
round 1: memspace glibc glibc-rt jemalloc mimalloc tcmalloc
round 2: glibc glibc-rt jemalloc mimalloc tcmalloc memspace
round 3: glibc-rt jemalloc mimalloc tcmalloc memspace glibc
round 4: jemalloc mimalloc tcmalloc memspace glibc glibc-rt
round 5: mimalloc tcmalloc memspace glibc glibc-rt jemalloc
section memspace: 3.1 s
section glibc: 59.0 s
section glibc-rt: 3.7 s
section jemalloc: 12.2 s
section mimalloc: 2.5 s
section tcmalloc: 2.7 s
note: 5 interleaved run(s) of each allocator, each run's figures in the CSV; timer cost subtracted; TSC calibrated
seconds: 83.3
exit: 0
