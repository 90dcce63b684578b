/* SPDX-License-Identifier: MIT */
/* classes.c: the small heap's size classes as constant tables (sizes, chunks, capacities, colours, the size lookup)
   and the presets that set the heap's limits (msi_heap_limits). Constants in .rodata, filled by the compiler:
   a process writes none of them and runs no code to make them. */
#include "heap_internal.h"

MSI_START_BSS msi_heap_limits_t msi_heap_limits;

/* Size classes, constant tables (.rodata: shared with every process mapping the library, so a process writes
   none of them and runs no code to fill them):
   - sizes: 16-128 by 16, then 8 classes per doubling up to 4 KiB, then 16 per doubling up to 32 KiB (blocks of
     4-32 KiB hold most of the rounding);
   - a span's chunks: the fewest (1..8) holding at least 4 blocks with at most 1/64 of it wasted; else the count
     wasting the least (per mille, the fewest chunks among equals) with at least 2 blocks (CLS_CHUNKS);
   - its capacity (the secure build's guard page at the span's end left out);
   - for heap.h msi_span_block_start: the size's power-of-two factor and the inverse of its odd part mod 2^64
     (Newton's iteration from d0 itself, right to 3 bits: each step doubles them);
   - the lookup table: units of 16 bytes above the previous class's size, up to this class's, map to it.
   tests/heap test_heap_unit (test_classes) checks them against the same rules computed by loops. */
#define CLS_SUB(c, k) ((c) < (k) ? 0 : (c) - (k)) /* no negative shift count in the branches not taken (clang) */
#define CLS_SIZE(c) ((uint32_t)((c) < 8 ? 16u * ((c) + 1u) \
                                : (c) < 48 ? (128u << CLS_SUB(c, 8) / 8) / 8 * (8u + CLS_SUB(c, 8) % 8 + 1u) \
                                           : (4096u << CLS_SUB(c, 48) / 16) / 16 * (16u + CLS_SUB(c, 48) % 16 + 1u)))
#define CLS_BYTES(n) ((uint64_t)(n) * MSI_HEAP_CHUNK - MSI_HEAP_GUARD)
#define CLS_CAP(n, bs) (CLS_BYTES(n) / (bs))
#define CLS_WASTE(n, bs) (CLS_BYTES(n) - CLS_CAP(n, bs) * (bs))
#define CLS_FITS(n, bs) (CLS_CAP(n, bs) >= 4 && CLS_WASTE(n, bs) * 64 <= CLS_BYTES(n))
#define CLS_FIRST_FIT(bs) (CLS_FITS(1, bs) ? 1 : CLS_FITS(2, bs) ? 2 : CLS_FITS(3, bs) ? 3 : CLS_FITS(4, bs) ? 4 : \
                           CLS_FITS(5, bs) ? 5 : CLS_FITS(6, bs) ? 6 : CLS_FITS(7, bs) ? 7 : CLS_FITS(8, bs) ? 8 : 0)
/* the waste in per mille and n in the low 4 bits: the least key is the least waste, the fewest chunks among equals */
#define CLS_KEY(n, bs) ((CLS_CAP(n, bs) >= 2 ? CLS_WASTE(n, bs) * 1000 / CLS_BYTES(n) : (uint64_t)1 << 40) * 16 + (n))
#define CLS_MIN(a, b) ((a) < (b) ? (a) : (b))
#define CLS_LEAST(bs) CLS_MIN(CLS_MIN(CLS_MIN(CLS_KEY(1, bs), CLS_KEY(2, bs)), CLS_MIN(CLS_KEY(3, bs), CLS_KEY(4, bs))), \
                              CLS_MIN(CLS_MIN(CLS_KEY(5, bs), CLS_KEY(6, bs)), CLS_MIN(CLS_KEY(7, bs), CLS_KEY(8, bs))))
#define CLS_CHUNKS(c) ((uint8_t)(CLS_FIRST_FIT(CLS_SIZE(c)) ? CLS_FIRST_FIT(CLS_SIZE(c)) : CLS_LEAST(CLS_SIZE(c)) % 16))
#define CLS_D0(c) ((uint64_t)CLS_SIZE(c) >> __builtin_ctz(CLS_SIZE(c)))
#define CLS_NEWTON(d, x) ((x) * (2 - (d) * (x)))
#define CLS_INV(c) CLS_NEWTON(CLS_D0(c), CLS_NEWTON(CLS_D0(c), CLS_NEWTON(CLS_D0(c), CLS_NEWTON(CLS_D0(c), \
                                                                                  CLS_NEWTON(CLS_D0(c), CLS_D0(c))))))
#define CLS_8(X, b) X(b) X(b + 1) X(b + 2) X(b + 3) X(b + 4) X(b + 5) X(b + 6) X(b + 7)
#define CLS_ALL(X) CLS_8(X, 0) CLS_8(X, 8) CLS_8(X, 16) CLS_8(X, 24) CLS_8(X, 32) CLS_8(X, 40) CLS_8(X, 48) \
                   CLS_8(X, 56) CLS_8(X, 64) CLS_8(X, 72) CLS_8(X, 80) CLS_8(X, 88)
_Static_assert(MSI_HEAP_CLASSES == 96 && CLS_SIZE(95) == MSI_HEAP_SMALL_MAX, "CLS_ALL lists every class");
#define CLS_E_SIZE(c) CLS_SIZE(c),
#define CLS_E_CHUNKS(c) CLS_CHUNKS(c),
#define CLS_E_CAP(c) (uint32_t)CLS_CAP(CLS_CHUNKS(c), CLS_SIZE(c)),
#define CLS_E_INV(c) CLS_INV(c),
#define CLS_E_SHIFT(c) (uint8_t)__builtin_ctz(CLS_SIZE(c)),
#define CLS_E_LUT(c) [(c) ? (CLS_SIZE((c) - 1) >> 4) + 1 : 0 ... CLS_SIZE(c) >> 4] = (c),
const uint32_t msi_heap_class_size[MSI_HEAP_CLASSES] = {CLS_ALL(CLS_E_SIZE)};
const uint8_t msi_heap_class_chunks[MSI_HEAP_CLASSES] = {CLS_ALL(CLS_E_CHUNKS)};
const uint8_t msi_heap_size_lut[(MSI_HEAP_SMALL_MAX >> 4) + 1] = {CLS_ALL(CLS_E_LUT)};
const uint64_t msi_heap_class_inv[MSI_HEAP_CLASSES] = {CLS_ALL(CLS_E_INV)};
const uint8_t msi_heap_class_shift[MSI_HEAP_CLASSES] = {CLS_ALL(CLS_E_SHIFT)};
_Static_assert(MSI_HEAP_CLASSES <= MS_STATS_SIZE_CLASSES + MS_STATS_SIZE_CLASSES_MORE, "every class has its statistics entry");
const uint32_t msi_heap_class_capacity[MSI_HEAP_CLASSES] = {CLS_ALL(CLS_E_CAP)};

/* Span colouring. Spans start on 64 KiB chunks, so without it the n-th block of every span of a class lies at the
   same offset in its 4 KiB page, and so in the same sets of a cache indexed by the low address bits (L1: 4 KiB a
   way): the first block of every span at offset 0, and for classes such as 4608 or 7168 (SQLite's page cache: a page
   and its header a block) every block's header in an eighth or a sixteenth of the sets. SQLite building an index then
   misses L1 far more often than under glibc's heap, whose chunks follow each other at no fixed stride. So a span's
   blocks start at a colour past its chunk: a multiple of 64, taken from the chunk's address (Fibonacci hashing: no
   shared counter, and neighbouring chunks differ), among the class's colours: as many as its waste allows (what its
   chunks hold beyond its blocks; at most 64 colours, 4032 bytes), and at least 8 (up to 448 bytes: a span whose colour
   passes its waste holds the blocks that still fit, a few fewer). Blocks stay aligned to 64, and to their size's power
   of two up to that; the powers of two from 128 on keep a single colour (their blocks aligned to their size), and an
   aligned request above 64 bytes takes such a class (small_aligned in api.c). The secure build does not colour (its
   guard page makes every class's waste large, and its carving is shuffled anyway). */
#define CLS_WASTE_COLOURS(c) (CLS_WASTE(CLS_CHUNKS(c), CLS_SIZE(c)) / 64 + 1)
#define CLS_POW2(c) ((CLS_SIZE(c) & (CLS_SIZE(c) - 1)) == 0)
#define CLS_COLOURS(c) (MSI_HEAP_SECURE || (CLS_POW2(c) && CLS_SIZE(c) >= 128) ? 1u \
                        : CLS_WASTE_COLOURS(c) < 8 ? 8u : CLS_MIN(CLS_WASTE_COLOURS(c), 64u))
#define CLS_E_COLOURS(c) (uint8_t)CLS_COLOURS(c),
const uint8_t msi_heap_class_colours[MSI_HEAP_CLASSES] = {CLS_ALL(CLS_E_COLOURS)};
_Static_assert(CLS_COLOURS(7) == 1 && CLS_COLOURS(95) == 1, "the powers of two from 128 on have one colour");
#if MSI_HEAP_MINI
_Static_assert(CLS_SIZE(MSI_HEAP_MINI_CLASSES - 1) == MSI_HEAP_MINI_MAX && CLS_SIZE(MSI_HEAP_MINI_CLASSES) > MSI_HEAP_MINI_MAX,
               "the mini classes are those up to MSI_HEAP_MINI_MAX");
_Static_assert(MSI_HEAP_MINI_MAX <= 4 * MSI_HEAP_MINI_SIZE, "a mini span holds a block of its class");
#endif

MSI_STARTUP_TEXT void msi_heap_set_preset(int preset) {
  msi_heap_limits_t l;
  switch (preset) {
  case 0: l = (msi_heap_limits_t){SIZE_MAX, SIZE_MAX, 64, SIZE_MAX, 30, SIZE_MAX, true}; break;
  case 2: l = (msi_heap_limits_t){256 * MSI_KiB, 1 * MSI_MiB, 4, 8 * MSI_MiB, 22, 4 * MSI_MiB, true}; break;
  case 3: l = (msi_heap_limits_t){0, 0, 0, 0, 0, 0, false}; break;
  default: l = (msi_heap_limits_t){16 * MSI_MiB, 64 * MSI_MiB, 64, 128 * MSI_MiB, 26, 64 * MSI_MiB, true}; break;
  }
  msi_heap_limits = l;
}
