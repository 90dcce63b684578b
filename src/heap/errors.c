/* SPDX-License-Identifier: MIT */
/* errors.c: the heap's checks of a freed block and its reports of a bad pointer, a double free or a corrupted
   free list, each ending the process. Cold: the fast paths reach them only to abort. */
#include "heap_internal.h"

MSI_START_DATA bool msi_heap_checks = MSI_HEAP_CHECKS_BUILD;

/* a local free with checks on: the block must not already be on the span's free list (the cookie catches most
   double frees; this catches one whose cookie was overwritten), and debug builds poison the freed bytes */
void msi_heap_check_free(msi_span_t *s, msi_block_t *b) { /* the caller has checked the cookie */
  /* the cookie catches a double free unless the program wrote over the freed block; the walk also catches the most
     recent frees then. Only the debug build walks the whole list (up to 4096 blocks: too slow for a default build) */
  const unsigned walk = MEMSPACE_DEBUG ? 4096 : 8;
  unsigned n = 0;
  for (msi_block_t *f = s->free; f != msi_span_list_end(s) && n < walk; f = msi_block_next(s, f), n++) /* checked */
    if (f == b) msi_heap_bad_pointer(b, "free(): double free");
  /* remote */
  for (msi_block_t *f = s->rfree; f && f != msi_span_list_end(s) && n < walk; f = msi_block_next(s, f), n++)
    if (f == b) msi_heap_bad_pointer(b, "free(): double free");
#if MEMSPACE_DEBUG
  if (s->block_size > sizeof(msi_block_t)) memset(b + 1, 0xdf, s->block_size - sizeof(msi_block_t));
#endif
}

_Noreturn void msi_heap_bad_pointer(const void *p, const char *what) {
  msi_error("%s: %p (memspace heap); aborting", what, p);
  abort();
}

/* a free of a block whose cookie says it is on a free list: freed already, or carved and never handed out */
_Noreturn void msi_heap_freed_again(const msi_span_t *s, const void *p, const char *call) {
  bool never = msi_block_state(s, p) == MSI_COOKIE_CARVED && (msi_block_word(p, 1) & MSI_COOKIE_CARVED);
  msi_error("%s(): %s: %p (memspace heap); aborting", call,
            never ? "invalid pointer (a block never allocated)" : call[0] == 'f' ? "double free" : "pointer already freed", p);
  abort();
}

/* a pointer of the small region in no live span. A block of a mini span an empty orphan gave back (orphan_reclaim:
   the descriptor stays, state free and no owner, until a mini span takes its granule again) was freed with every
   other block of its heap, so one of its starts is freed again; anything else is an invalid pointer. Cold: the
   free and realloc paths reach it only to abort */
_Noreturn void msi_heap_bad_small(const void *p, const char *call) {
  bool again = false;
#if MSI_HEAP_MINI
  const msi_segment_t *seg = (const msi_segment_t *)((uintptr_t)p & ~(MSI_HEAP_SEG_SIZE - 1));
  uintptr_t off = (uintptr_t)p & (MSI_HEAP_SEG_SIZE - 1);
  if (off >= MSI_HEAP_MINI_BASE && off < MSI_HEAP_MINI_BASE + MSI_HEAP_MINI_SPANS * MSI_HEAP_MINI_SIZE) {
    unsigned g = (unsigned)((off - MSI_HEAP_MINI_BASE) >> MSI_HEAP_MINI_SHIFT);
    uint8_t d = MSI_SEEN(seg->mini_map[g]);
    const msi_span_t *m = d < MSI_HEAP_MINI_DESCS ? msi_seg_mini(seg, d) : NULL;
    again = m && MSI_SEEN(m->state) == MSI_SPAN_FREE && !MSI_SEEN(m->owner) && m->block_size &&
            (uintptr_t)p >= m->base && msi_seg_mini_granule(seg, m) <= g &&
            g < msi_seg_mini_granule(seg, m) + msi_heap_mini_granules(m->block_size) && msi_span_block_start(m, p);
  }
#endif
  msi_error("%s(): %s: %p (memspace heap); aborting", call,
            !again ? "invalid pointer" : call[0] == 'f' ? "double free" : "pointer already freed", p);
  abort();
}

/* the block's link and its copy (heap.h msi_block_set) disagree, and not as a carved block's do. Named for what
   the words say: the copy a link of the span and the link something else (the link word written to; a block in
   use when it leads to one), or neither a link (the header overwritten, or a block in use reached by a link) */
static bool link_plausible(const msi_span_t *s, uintptr_t n) {
  return n == (uintptr_t)msi_span_list_end(s) || (n >= s->base && msi_span_block_start(s, (const void *)n));
}
_Noreturn void msi_heap_corrupt_link(const msi_span_t *s, const void *block) {
  uintptr_t link = msi_block_word(block, 0) ^ s->key, copy = msi_block_word(block, 1) & ~MSI_COOKIE_CARVED;
  if (!link_plausible(s, copy))
    msi_error("free list corrupted at %p (blocks of %u bytes): not a free block (a block in use, reached by "
              "a link written after free; or a free block's header overwritten after free or by an overflow from the "
              "block before) (memspace heap); aborting", block, s->block_size);
  else if (link && link_plausible(s, link) && !msi_block_is_free(s, (const void *)link))
    msi_error("free list corrupted at %p (blocks of %u bytes): its link was changed to lead to %p, a block in use "
              "(written after free, or overflowed into from the block before); that block is not handed out again "
              "(memspace heap); aborting", block, s->block_size, (void *)link);
  else
    msi_error("corrupted free-list link in the free block %p (blocks of %u bytes): decodes to %p, not the link it "
              "holds (%p): the block was written after free, or overflowed into from the block before (memspace "
              "heap); aborting",
              block, s->block_size, (void *)link, (void *)copy);
  abort();
}

