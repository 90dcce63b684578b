/* SPDX-License-Identifier: MIT */
/* direct.c: large blocks the region has no slot for. The region's reservation shrinks when the address space is
   limited (RLIMIT_AS: it takes at most half the limit) or refused, and with it the largest slot and the number of
   slots per size; a block that finds no slot is then mapped on its own, where the kernel chooses, as glibc maps
   its large blocks, and recorded in a small table. free, realloc and usable_size look a pointer up here only when
   no other part owns it, so the table costs nothing until a direct block exists. Each is one mapping; the table
   holds at most DIRECT_MAX (they are at least as large as a missing slot, so far fewer fit in a limited space).
   The last FREED_RING freed addresses are remembered: a second free of one is reported as a double free. */
#include "heap.h"
#include "os.h"
#include <errno.h>
#include <sys/mman.h>

#define DIRECT_MAX 4096

static struct {
  uintptr_t addr;
  size_t len; /* mapped bytes (a page multiple) */
} table[DIRECT_MAX];
static size_t count;
/* the last blocks freed, so that a second free is named as such (instead of reaching the C library's free) */
#define FREED_RING 64
static uintptr_t freed[FREED_RING];
static unsigned freed_next;
static _Atomic bool any_freed; /* read without the lock: false = nothing to look up */
static _Atomic size_t live; /* entries, read without the lock: 0 = nothing to look up */
static _Atomic uint64_t bytes;
static msi_lock_t lock = MSI_LOCK_INIT;

/* the entry of p, or -1; lock held */
static long find(uintptr_t p) {
  for (size_t i = 0; i < count; i++)
    if (table[i].addr == p) return (long)i;
  return -1;
}

void *msi_direct_alloc(size_t size, size_t alignment) {
  size_t ps = msi_os_page_size(), len = msi_round_up(size ? size : 1, ps);
  size_t extra = alignment > ps ? alignment : 0;
  if (len == 0 || len + extra < len) { errno = ENOMEM; return NULL; }
  void *m = msi_os_mmap(NULL, len + extra, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) { errno = ENOMEM; return NULL; }
  uintptr_t a = (uintptr_t)m;
  if (extra) { /* trim to the alignment */
    uintptr_t b = msi_align_up(a, alignment);
    if (b > a) msi_os_munmap(m, b - a);
    if (a + extra > b) msi_os_munmap((void *)(b + len), a + extra - b);
    a = b;
  }
  msi_lock(&lock);
  if (count == DIRECT_MAX) {
    msi_unlock(&lock);
    msi_os_munmap((void *)a, len);
    errno = ENOMEM;
    return NULL;
  }
  for (unsigned i = 0; i < FREED_RING; i++)
    if (freed[i] == a) freed[i] = 0; /* the address is live again */
  table[count].addr = a;
  table[count].len = len;
  count++;
  atomic_store_explicit(&live, count, memory_order_relaxed);
  msi_unlock(&lock);
  atomic_fetch_add_explicit(&bytes, len, memory_order_relaxed);
  return (void *)a;
}

size_t msi_direct_usable(const void *p) {
  if (!atomic_load_explicit(&live, memory_order_relaxed)) return 0;
  msi_lock(&lock);
  long i = find((uintptr_t)p);
  size_t len = i < 0 ? 0 : table[i].len;
  msi_unlock(&lock);
  return len;
}

bool msi_direct_free(void *p) {
  if (!atomic_load_explicit(&live, memory_order_relaxed)) return false;
  msi_lock(&lock);
  long i = find((uintptr_t)p);
  if (i < 0) { msi_unlock(&lock); return false; }
  size_t len = table[i].len;
  table[i] = table[--count];
  freed[freed_next++ % FREED_RING] = (uintptr_t)p;
  atomic_store_explicit(&any_freed, true, memory_order_relaxed);
  atomic_store_explicit(&live, count, memory_order_relaxed);
  msi_unlock(&lock);
  msi_os_munmap(p, len);
  atomic_fetch_sub_explicit(&bytes, len, memory_order_relaxed);
  return true;
}

/* grows or shrinks in place or moves with mremap (pages move, no byte is copied); NULL + ENOMEM: unchanged */
void *msi_direct_realloc(void *p, size_t size) {
  size_t len = msi_round_up(size ? size : 1, msi_os_page_size());
  if (len == 0) { errno = ENOMEM; return NULL; }
  msi_lock(&lock);
  long i = find((uintptr_t)p);
  if (i < 0) { msi_unlock(&lock); msi_heap_bad_pointer(p, "realloc(): invalid pointer"); }
  size_t old = table[i].len;
  void *q = len == old ? p : msi_os_mremap(p, old, len, MREMAP_MAYMOVE, NULL);
  if (q == MAP_FAILED) { msi_unlock(&lock); errno = ENOMEM; return NULL; }
  table[i].addr = (uintptr_t)q;
  table[i].len = len;
  msi_unlock(&lock);
  if (len > old) atomic_fetch_add_explicit(&bytes, len - old, memory_order_relaxed);
  else atomic_fetch_sub_explicit(&bytes, old - len, memory_order_relaxed);
  return q;
}

bool msi_direct_was_freed(const void *p) {
  bool hit = false;
  if (!atomic_load_explicit(&any_freed, memory_order_relaxed)) return false;
  msi_lock(&lock);
  for (unsigned i = 0; i < FREED_RING && !hit; i++) hit = freed[i] && freed[i] == (uintptr_t)p;
  msi_unlock(&lock);
  return hit;
}

uint64_t msi_direct_bytes(void) { return atomic_load_explicit(&bytes, memory_order_relaxed); }

void msi_direct_lock(void) { msi_lock(&lock); }
void msi_direct_unlock(bool child) {
  if (child) msi_lock_reset(&lock);
  else msi_unlock(&lock);
}
