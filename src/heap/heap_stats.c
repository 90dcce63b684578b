/* SPDX-License-Identifier: MIT */
/* heap_stats.c: the small heap's statistics: a walk of every segment counting idle and active spans, and each
   class's blocks. */
#include "heap_internal.h"

/* statistics: walks every segment without the segments' lock, a snapshot while other threads allocate. The fields
   it reads are written with relaxed atomic stores (MSI_SEEN_SET, heap.h) and read here with relaxed loads: each
   value one that was stored, a span maybe counted in its former state */
/* walks the segments: the bytes of idle spans (free chunks still resident, cached spans) and of spans serving a
   class; with st, each active span's blocks into its class's entry */
static void tally_blocks(ms_stats_t *st, const msi_span_t *s) {
  ms_stats_class_t *c = msi_stats_class(st, MSI_SEEN(s->cls));
  uint32_t used = msi_span_used_seen(s), cap = MSI_SEEN(s->capacity);
  if (used > cap) used = cap;
  c->allocated += used;
  c->cached += cap - used;
  c->mapped += cap;
}
void msi_heap_spans_tally(ms_stats_t *st, uint64_t *idle, uint64_t *active) {
  uintptr_t top = atomic_load_explicit(&msi_heap_g.small_top, memory_order_acquire);
  *idle = *active = 0;
  for (uintptr_t off = 0; off < top; off += MSI_HEAP_SEG_SIZE) {
    msi_segment_t *seg = (msi_segment_t *)(msi_heap_g.base + off);
    *idle += (uint64_t)msi_popcount64(MSI_SEEN(seg->dirty_mask)) * MSI_HEAP_CHUNK;
    for (unsigned i = 1; i < MSI_HEAP_SEG_CHUNKS; i++) {
      msi_span_t *s = msi_seg_span(seg, i);
      if (MSI_SEEN(seg->map[i]) != msi_seg_map_of(i)) continue;
      uint8_t state = MSI_SEEN(s->state);
      uint64_t bytes = (uint64_t)MSI_SEEN(s->nchunks) * MSI_HEAP_CHUNK;
      if (state == MSI_SPAN_CACHED) { *idle += bytes; continue; }
      if (state != MSI_SPAN_ACTIVE) continue;
      *active += bytes;
      if (st) tally_blocks(st, s);
    }
#if MSI_HEAP_MINI
    for (unsigned d = 0, n = MSI_SEEN(seg->mini_descs); st && d < n; d++) /* (no bytes: the header's chunk) */
      if (MSI_SEEN(msi_seg_mini(seg, d)->state) == MSI_SPAN_ACTIVE) tally_blocks(st, msi_seg_mini(seg, d));
#endif
  }
}

void msi_heap_class_stats(ms_stats_t *st, uint64_t *cached_spans_bytes) {
  uint64_t active;
  msi_heap_spans_tally(st, cached_spans_bytes, &active);
  for (unsigned c = 0; c < MSI_HEAP_CLASSES; c++) {
    msi_stats_class(st, c)->block_size = msi_heap_class_size[c];
    msi_stats_class(st, c)->returned = atomic_load_explicit(&msi_heap_returned_spans[c], memory_order_relaxed);
  }
}
