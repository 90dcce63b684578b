command: build/memspace bench all
part: dma
mode: default
date: 2026-11-28T22:22:47Z
environment:
machine: cpu="Intel(R) Xeon(R) Processor" cores=2 memory_bytes=25276502016 kernel="Linux 6.18.44-fc-v669" arch=x86_64
libraries: glibc=2.36 memspace=0.1.0 jemalloc=5.3.0-1 mimalloc=2.0.9+ds-2 tcmalloc=2.10-1 tbbmalloc=2021.8.0-2+deb12u1
dma: pool_added_2m_pages=516 phys_readable=1 reps=3 bytes_per_measurement=1073741824
section limits: 3.0 s
section ring: 44.8 s
section translation: 0.5 s
section alloc: 1.4 s
seconds: 49.7
exit: 0
