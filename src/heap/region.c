/* SPDX-License-Identifier: MIT */
/* region.c: the heap's address space: the segment area and the large slots' sub-regions reserved at start-up,
   placed at a random place above the program, sized under RLIMIT_AS, and given back when a lowered limit
   refuses mappings (msi_heap_fit_limit). */
#include "heap_internal.h"

/* Under RLIMIT_AS a reservation counts against the limit, and so does every mapping of the program: the heap takes
   a share of the room left under the limit at start-up (the limit less VmSize), never a fixed amount (a fixed 92 MiB
   would make `ls` and Python fail at start-up under `ulimit -v 100000`, which glibc runs). The large slot sizes'
   sub-regions (22 of them) take at most a sixteenth of that room, with sub-regions from 128 GiB down to 64 KiB; with
   less room there is no slot area, and every large block is mapped on its own (direct.c), as glibc maps its large
   blocks. Larger blocks, and blocks finding every slot of their size taken, are direct too. The segment area is not
   reserved at all there (small_reserved 0): it starts 64 GiB (or twice the limit) above the program's break, the far
   end of the kernel's placement in both layouts (top-down from below the stack; bottom-up from a third of the address
   space, below a PIE program), and grows a segment at a time with MAP_FIXED_NOREPLACE (segment_new), which never
   replaces a mapping that landed there (a reservation of a share of the limit would cap small blocks at that share:
   glibc and mimalloc fill nearly the whole limit with 100-byte blocks under `ulimit -v 4000000`). Only where that
   address is unusable is a segment area reserved: an eighth of the room. (Put just below the sub-regions, a program's
   own mappings spread downwards could end the area: many mmaps of which the program keeps a page each leave it almost
   nothing.) A limit lowered later (setrlimit) is met when a mapping is refused: msi_heap_fit_limit. */
#define SMALL_AREA_MAX ((size_t)MAX_SEGMENTS << MSI_HEAP_SEG_SHIFT)
#define BREAK_MARGIN ((size_t)64 << 30) /* room left to the program's break (sbrk) */
static bool small_area_above_break(size_t limit, uintptr_t large_base, size_t large_size) {
  size_t margin = limit < ((size_t)1 << 60) && limit / 4 * 8 > BREAK_MARGIN ? limit / 4 * 8 : BREAK_MARGIN;
  uintptr_t base = msi_align_up((uintptr_t)sbrk(0) + margin, MSI_HEAP_SEG_SIZE);
  if (base < margin || base + SMALL_AREA_MAX < base || (base + SMALL_AREA_MAX) >> 47) return false;
  if (base < large_base + large_size && large_base < base + SMALL_AREA_MAX) return false; /* overlap */
  msi_heap_g.base = base;
  msi_heap_g.small_size = SMALL_AREA_MAX;
  msi_heap_g.small_reserved = 0;
  return true;
}

/* the reservations' alignment slack, before and after each region, and the segments region_skip passes over
   (given back by msi_heap_fit_limit_locked) */
MSI_START_BSS static struct { uintptr_t addr; size_t len; } slack[4];
MSI_START_DATA static unsigned nslack; /* read, then written, at start-up */

/* reserves r with its alignment slack kept (one system call at start-up), recorded for msi_heap_fit_limit_locked; the
   reservation ends below 2^48 (span xfree words hold 48-bit addresses). false when refused */
MSI_STARTUP_TEXT static bool region_reserve(msi_os_reservation_t *r) {
  r->flags |= MSI_OS_RESERVE_KEEP_SLACK;
  if (msi_os_reserve(r) != 0) return false;
  uintptr_t base = (uintptr_t)r->addr, map = (uintptr_t)r->map;
  if (nslack + 2 <= 4) {
    slack[nslack].addr = map, slack[nslack++].len = base - map;
    slack[nslack].addr = base + r->size, slack[nslack++].len = map + r->map_size - (base + r->size);
  }
  return true;
}

static void region_large(uintptr_t base, size_t shift) {
  msi_heap_g.large_base = base;
  msi_heap_g.large_size = base ? MSI_HEAP_LARGE_CLASSES * ((size_t)1 << shift) : 0;
  msi_heap_g.sub_shift = shift; /* below MSI_HEAP_LARGE_MIN_SHIFT: no slot (large.c) */
}

/* The reservation without a limit: 2^37 sub-regions (8 of them for the slot table and the segments), down to `min`
   bytes when refused. It is asked for at least 64 GiB above the program (its headers: getauxval, no system call; its
   break lies between, as under RLIMIT_AS: small_area_above_break; region_place adds 0-63 x 128 GiB, region_skip up
   to 512 MiB more to the segments), not where the kernel puts a mapping without a hint,
   just below the libraries: there it would push every later mapping (the locale archive, a dlopen()ed library, a
   thread's stack) below its 4 TiB, away from the libraries, and each short process would pay for their page-table
   pages of their own. The slot table's place comes first (large.c table_get: the entries past each size's first
   16 slots), the segment area right after it, in the same gibibyte: the first segment and the table share their
   page-table pages above the last level. */
/* the kernel's 16 random bytes for this process (AT_RANDOM), or zeros (false) */
MSI_STARTUP_TEXT bool msi_heap_kernel_random(uint64_t r[2]) {
  const void *at_random = (const void *)getauxval(AT_RANDOM);
  r[0] = r[1] = 0;
  if (at_random) msi_memcpy(r, at_random, 2 * sizeof *r);
  return at_random != NULL;
}

/* which of 64 places 128 GiB apart above the program the region asks for: the kernel's random bytes and the stack's
   address (randomised apart from the program), so the program's address does not give the heap's. The top bits of
   two products of that value (region_place, region_skip): the 13 bits they show of a mix of the kernel's 128
   random bits leave the heap's secrets (msi_heap_global_init: 64 of those bits and an address) unknown */
MSI_STARTUP_TEXT static uint64_t region_random(void) {
  uint64_t r[2];
  msi_heap_kernel_random(r); /* (zeros without them: the stack's address alone) */
  return (r[0] + r[1] * 0xD6E8FEB86659FD93ull) ^ (uintptr_t)__builtin_frame_address(0);
}
MSI_STARTUP_TEXT static unsigned region_place(uint64_t x) { return (unsigned)((x * 0x9E3779B97F4A7C15ull) >> 58); }
/* The places alone leave a block's address one of about 70 (the program's own place, aligned up to 128 GiB,
   adds about 3 bits): the segment area also starts a random number of segments (below 128, 512 MiB) past the slot
   table, within the gibibyte the table starts (the two keep sharing their page-table page) and a 32nd of the area,
   so that the first blocks' addresses take about 7 more random bits, the part below 4 MiB staying fixed. The
   segments skipped stay reserved and untouched: address space only */
MSI_STARTUP_TEXT static size_t region_skip(uint64_t x, size_t table, size_t area) {
  size_t gib = (size_t)1 << 30, room = table + MSI_HEAP_SEG_SIZE <= gib ? gib - table - MSI_HEAP_SEG_SIZE : 0;
  if (room > area / 32) room = area / 32;
  size_t skip = (size_t)((x * 0xC2B2AE3D27D4EB4Full) >> 57) << MSI_HEAP_SEG_SHIFT;
  while (skip > room) skip >>= 1;
  return skip & ~(MSI_HEAP_SEG_SIZE - 1);
}

MSI_STARTUP_TEXT static bool region_unlimited(size_t min) {
  size_t classes = MSI_HEAP_LARGE_CLASSES, top = (size_t)1 << MSI_HEAP_LARGE_MAX_SHIFT;
  msi_os_reservation_t r = {.want = (8 + classes) * top, .min = min, .align = top, .flags = MSI_OS_RESERVE_HALVE_ALIGN};
  uintptr_t prog = (uintptr_t)getauxval(AT_PHDR);
  uint64_t x = region_random();
  uintptr_t hint = msi_align_up(prog + BREAK_MARGIN, top) + (uintptr_t)region_place(x) * top;
  if (prog && hint > prog && !((hint + r.want + top) >> 47)) r.hint = hint;
  if (!region_reserve(&r)) return false;
  size_t sub = r.got_align, shift = (size_t)__builtin_ctzll(sub);
  size_t table = msi_align_up(msi_large_table_bytes(shift), MSI_HEAP_SEG_SIZE);
  size_t skip = region_skip(x, table, 8 * sub - table);
  if (skip && nslack < 4) { /* reserved, never used: a limit lowered later gets it back (msi_heap_fit_limit_locked) */
    slack[nslack].addr = (uintptr_t)r.addr + table, slack[nslack++].len = skip;
  }
  msi_heap_g.table_area = (uintptr_t)r.addr;
  msi_heap_g.base = (uintptr_t)r.addr + table + skip;
  msi_heap_g.small_size = msi_heap_g.small_reserved = 8 * sub - table - skip;
  region_large((uintptr_t)r.addr + 8 * sub, shift);
  if (sub != top)
    msi_verbose("heap: reserved %zu MiB of address space (less than the usual 3.75 TiB): blocks above %zu MiB "
                "are mapped on their own", r.map_size >> 20, sub >> 20);
  return true;
}

/* The whole reservation is tried first, before RLIMIT_AS is asked for (a system call in every allocating
   process): under a limit the kernel refuses it, as it is larger than any limit set in practice, and a limit
   above it and what the program maps (3.75 TiB and more) is taken for none. */
MSI_STARTUP_TEXT bool msi_heap_region_init(void) {
  size_t classes = MSI_HEAP_LARGE_CLASSES, top = (size_t)1 << MSI_HEAP_LARGE_MAX_SHIFT;
  if (region_unlimited((8 + classes) * top)) return true;
  size_t limit = msi_os_as_limit();
  msi_heap_g.as_limited = limit != SIZE_MAX;
  if (limit == SIZE_MAX) {
    if (region_unlimited((8 + classes) << 22)) return true;
    /* every such reservation refused (a seccomp filter refusing large mmaps, where glibc goes on with brk): no
       reservation for segments, as under a limit (they grow a segment at a time above the break); slots as large
       as a mapping is allowed */
    msi_verbose("heap: reserving address space refused (%s): segments are mapped one at a time", MSI_ERRNO(errno));
  }
  size_t vm = limit == SIZE_MAX ? 0 : msi_os_vm_size(), room = limit > vm ? limit - vm : 0;
  /* the slot area with one sub-region of slack within a sixteenth of the room, or none */
  msi_os_reservation_t r = {.want = classes * top, .min = classes << MSI_HEAP_LARGE_MIN_SHIFT, .align = top,
                            .budget = room / 16 ? room / 16 : 1,
                            .flags = MSI_OS_RESERVE_HALVE_ALIGN | MSI_OS_RESERVE_STRICT};
  uintptr_t large = region_reserve(&r) ? (uintptr_t)r.addr : 0;
  region_large(large, large ? (size_t)__builtin_ctzll(r.got_align) : MSI_HEAP_LARGE_MIN_SHIFT - 1);
  msi_verbose("heap: RLIMIT_AS %zu MiB, %zu MiB mapped: %s%zu KiB reserved for large blocks", limit >> 20, vm >> 20,
              large ? "" : "nothing ", large ? r.size >> 10 : 0);
  if (small_area_above_break(limit, large, msi_heap_g.large_size)) return true;
  /* no usable address above the break: a reserved segment area, an eighth of the room (at least a segment) */
  size_t want = msi_align_down(room / 8, MSI_HEAP_SEG_SIZE);
  msi_os_reservation_t sm = {.want = want > MSI_HEAP_SEG_SIZE ? want : MSI_HEAP_SEG_SIZE, .min = MSI_HEAP_SEG_SIZE,
                             .align = MSI_HEAP_SEG_SIZE, .unit = MSI_HEAP_SEG_SIZE};
  if (!region_reserve(&sm)) return false;
  msi_heap_g.base = (uintptr_t)sm.addr;
  msi_heap_g.small_size = msi_heap_g.small_reserved = sm.size;
  return true;
}

/* A limit lowered at run time (setrlimit(RLIMIT_AS) below the address space the process holds) makes the kernel
   refuse every mapping, even one that replaces reserved pages (the reservation alone is over the limit): small
   blocks would end at once, and every other mapping of the program (a thread's stack) with them, where glibc goes on.
   After a refusal under a limit the reservations beyond what is in use go back: the segment area's past the
   segments made (it then grows a segment at a time, as when limited from the start) and the slot area's
   (msi_large_release_unused). Seg lock held. true: something went back. */
/* the segment area's reservation past the segments made goes back (seg lock held): its bytes */
size_t msi_heap_segments_unreserve(void) {
  uintptr_t top = atomic_load_explicit(&msi_heap_g.small_top, memory_order_relaxed), had = msi_heap_g.small_reserved;
  if (top >= had) return 0;
  msi_heap_g.small_reserved = top; /* first: an address there is no longer a wild pointer of ours */
  if (msi_os_munmap((void *)(msi_heap_g.base + top), had - top) == 0) return had - top;
  msi_heap_g.small_reserved = had;
  return 0;
}

bool msi_heap_fit_limit_locked(void) {
  size_t limit = msi_os_as_limit();
  if (limit == SIZE_MAX) return false;
  size_t freed = msi_heap_segments_unreserve();
  freed += msi_large_release_unused();
  for (unsigned i = 0; i < nslack; i++)
    if (slack[i].len && msi_os_munmap((void *)slack[i].addr, slack[i].len) == 0) {
      freed += slack[i].len;
      slack[i].len = 0;
    }
  if (freed)
    msi_verbose("heap: RLIMIT_AS is %zu MiB: %zu MiB of reserved address space given back", limit >> 20, freed >> 20);
  return freed != 0;
}

bool msi_heap_fit_limit(void) {
  if (!msi_heap_g.ready) return false;
  msi_lock(&seg_lock);
  bool r = msi_heap_fit_limit_locked();
  msi_unlock(&seg_lock);
  return r;
}

