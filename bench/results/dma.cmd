command: build/memspace bench all
part: dma
mode: default
date: 2026-11-29T20:24:28Z
environment:
host: free page reporting min_free_ms=300000 (was 0) max_waiting_mib=65536 (was 1024)
machine: cpu="AMD EPYC" cores=2 memory_bytes=25276059648 kernel="Linux 6.18.44-fc-v857" arch=x86_64
libraries: glibc=2.36 memspace=0.1.0 jemalloc=5.3.0-1 mimalloc=2.0.9+ds-2 tcmalloc=2.10-1 tbbmalloc=2021.8.0-2+deb12u1
dma: pool_added_2m_pages=516 phys_readable=1 reps=3 bytes_per_measurement=1073741824
section limits: 2.3 s
section ring: 37.5 s
section translation: 0.9 s
section alloc: 2.3 s
seconds: 43.1
exit: 0
