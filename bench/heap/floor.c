/* SPDX-License-Identifier: MIT */
/* floor.c: libheap_floor.so, an empty shared library. `memspace bench heap` preloads it into the real programs as
   the allocator `preload-floor`: what LD_PRELOAD itself costs (the dynamic loader's extra open, map and relocation
   in every process, no malloc replaced), the floor under every preloaded allocator's ratio to glibc. It defines
   nothing but this marker. */
__attribute__((visibility("default"))) int msb_preload_floor_marker = 1;
