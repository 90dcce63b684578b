/* SPDX-License-Identifier: MIT */
/* loopback.h: a loopback "device" for DMA buffers, shared by tests/dma and bench/dma.c (test and bench code:
   stdio and malloc are fine here; never part of the library).

   Like the RORC's internal data generator, the device is given only a scatter/gather list (physical address and
   length of each run). It finds where each run lives by its own reading of the kernel's tables, never through
   memspace's: it walks /proc/self/smaps for pinned mappings (VmFlags "lo" or "ht", as a device can only be
   given pinned memory; "dc", MADV_DONTFORK, which every DMA buffer has, also counts: sanitizer runtimes make mlock
   a no-op), reads /proc/self/pagemap for them and builds its own PFN -> virtual map. It rejects a
   list that names memory this process does not have pinned, runs that overlap, or runs of length 0. It then
   writes events of a given size as a ring, in list order, wrapping to the start when the next event does not
   fit. The consumer (the CPU side) checks each event at its place in the buffer's virtual memory.

   Event layout: 8-byte sequence number, 4-byte size, 4-byte magic, then payload. With a full pattern every
   payload byte depends on the sequence number (tests); otherwise the payload is a fixed pattern (bench). */
#ifndef MS_DMA_LOOPBACK_H
#define MS_DMA_LOOPBACK_H
#include "memspace.h"
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LB_MAGIC 0x4c425645u /* "EVBL" */
#define LB_HEADER 16
#define LB_PAGE 4096u

typedef struct { char *va; size_t len; } lb_chunk_t;
typedef struct {
  lb_chunk_t *chunks;  /* the device's view: virtual runs in list order */
  size_t nchunks;
  size_t total;        /* sum of the list's lengths */
  char error[256];     /* why the list was rejected */
  /* ring state */
  size_t pos, chunk, chunk_off;
  uint64_t seq;
} lb_device_t;

typedef void lb_copy_fn(void *dst, const void *src, size_t n);

/* reads pagemap entries for `n` pages from virtual page `vpage` into out; 0 or -1 */
static inline int lb_pagemap_read(int fd, uint64_t vpage, size_t n, uint64_t *out) {
  size_t done = 0;
  while (done < n) {
    ssize_t r = pread(fd, (char *)out + done * 8, (n - done) * 8, (off_t)((vpage + done) * 8));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    done += (size_t)r / 8;
  }
  return 0;
}

/* independent translation, for tests: physical address of every 4 KiB page of [va, va+len) (0 when not present or
   not readable). Returns 0 or -1. One bulk read. */
static inline int lb_phys_of_range(const void *va, size_t len, uint64_t *phys_out) {
  int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  uint64_t first = (uintptr_t)va / LB_PAGE, last = ((uintptr_t)va + len + LB_PAGE - 1) / LB_PAGE;
  int r = lb_pagemap_read(fd, first, (size_t)(last - first), phys_out);
  close(fd);
  if (r) return -1;
  for (size_t i = 0; i < last - first; i++) {
    uint64_t e = phys_out[i];
    phys_out[i] = (e >> 63) ? (e & ((1ull << 55) - 1)) * LB_PAGE : 0;
  }
  return 0;
}

typedef struct { uint64_t pfn0, pfn1, phys; size_t page_index; size_t seg; } lb_range_t; /* pages [pfn0, pfn1) */

static inline int lb_cmp_range(const void *a, const void *b) {
  const lb_range_t *x = a, *y = b;
  return x->phys < y->phys ? -1 : x->phys > y->phys;
}

/* attaches the device to a list; 0, or -1 with d->error set (the list is rejected) */
static inline int lb_attach(lb_device_t *d, const ms_dma_segment_t *segs, size_t n) {
  memset(d, 0, sizeof *d);
  if (!segs || n == 0) { snprintf(d->error, sizeof d->error, "empty list"); return -1; }
  lb_range_t *ranges = calloc(n, sizeof *ranges);
  size_t pages = 0;
  for (size_t i = 0; i < n; i++) {
    if (segs[i].length == 0) { snprintf(d->error, sizeof d->error, "segment %zu has length 0", i); free(ranges); return -1; }
    if (segs[i].phys + segs[i].length < segs[i].phys) {
      snprintf(d->error, sizeof d->error, "segment %zu wraps around", i);
      free(ranges);
      return -1;
    }
    ranges[i].pfn0 = segs[i].phys / LB_PAGE;
    ranges[i].pfn1 = (segs[i].phys + segs[i].length + LB_PAGE - 1) / LB_PAGE;
    ranges[i].phys = segs[i].phys;
    ranges[i].page_index = pages;
    ranges[i].seg = i;
    pages += (size_t)(ranges[i].pfn1 - ranges[i].pfn0);
    d->total += segs[i].length;
  }
  qsort(ranges, n, sizeof *ranges, lb_cmp_range);
  for (size_t i = 1; i < n; i++) {
    const ms_dma_segment_t *a = &segs[ranges[i - 1].seg], *b = &segs[ranges[i].seg];
    if (b->phys < a->phys + a->length) {
      snprintf(d->error, sizeof d->error, "segments %zu and %zu overlap physically (0x%llx)", ranges[i - 1].seg,
               ranges[i].seg, (unsigned long long)b->phys);
      free(ranges);
      return -1;
    }
  }
  char **va_of = calloc(pages, sizeof *va_of);
  /* the device's own search: pinned mappings of this process, their PFNs from pagemap */
  FILE *smaps = fopen("/proc/self/smaps", "r");
  int pm = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  if (!smaps || pm < 0) {
    snprintf(d->error, sizeof d->error, "cannot read /proc/self/smaps or pagemap: %s", strerror(errno));
    if (smaps) fclose(smaps);
    if (pm >= 0) close(pm);
    free(ranges), free(va_of);
    return -1;
  }
  char line[1024];
  unsigned long long vs = 0, ve = 0;
  size_t found = 0, buf_cap = 65536;
  uint64_t *buf = malloc(buf_cap * 8);
  bool zero_pfn = false, dup = false;
  while (fgets(line, sizeof line, smaps)) {
    unsigned long long a, b;
    if (sscanf(line, "%llx-%llx ", &a, &b) == 2 && strchr(line, '-') < strchr(line, ' ')) { vs = a, ve = b; continue; }
    if (strncmp(line, "VmFlags:", 8) != 0) continue;
    if (!strstr(line, " lo") && !strstr(line, " ht") && !strstr(line, " dc")) continue;
    for (uint64_t vp = vs / LB_PAGE; vp < ve / LB_PAGE; vp += buf_cap) {
      size_t k = ve / LB_PAGE - vp < buf_cap ? (size_t)(ve / LB_PAGE - vp) : buf_cap;
      if (lb_pagemap_read(pm, vp, k, buf)) break;
      for (size_t j = 0; j < k; j++) {
        if (!(buf[j] >> 63)) continue;
        uint64_t pfn = buf[j] & ((1ull << 55) - 1);
        if (pfn == 0) { zero_pfn = true; continue; }
        size_t lo = 0, hi = n; /* last range with pfn0 <= pfn */
        if (pfn < ranges[0].pfn0) continue;
        while (hi - lo > 1) {
          size_t mid = (lo + hi) / 2;
          if (ranges[mid].pfn0 <= pfn) lo = mid;
          else hi = mid;
        }
        /* a PFN may sit in two ranges only at a shared partial page: try both neighbours */
        for (size_t r = lo + 1; r-- > 0 && r + 1 >= lo;) {
          if (pfn < ranges[r].pfn0 || pfn >= ranges[r].pfn1) continue;
          size_t idx = ranges[r].page_index + (size_t)(pfn - ranges[r].pfn0);
          if (va_of[idx]) dup = true;
          else { va_of[idx] = (char *)(uintptr_t)((vp + j) * LB_PAGE); found++; }
        }
      }
    }
  }
  fclose(smaps);
  close(pm);
  free(buf);
  (void)dup; /* the same page mapped twice (shared memory): the first mapping is used */
  if (found < pages) {
    size_t miss = 0;
    while (va_of[miss]) miss++;
    size_t seg = 0;
    for (size_t i = 0; i < n; i++)
      if (ranges[i].page_index <= miss && miss < ranges[i].page_index + (ranges[i].pfn1 - ranges[i].pfn0)) seg = ranges[i].seg;
    snprintf(d->error, sizeof d->error, "%s: %zu of %zu pages not found, first in segment %zu (phys 0x%llx)",
             zero_pfn ? "physical addresses not readable (PFN 0: no CAP_SYS_ADMIN)"
                      : "the list names memory this process does not have pinned",
             pages - found, pages, seg, (unsigned long long)segs[seg].phys);
    free(ranges), free(va_of);
    return -1;
  }
  /* index ranges by segment to walk in list order */
  size_t *first_page = malloc(n * sizeof *first_page);
  for (size_t i = 0; i < n; i++) first_page[ranges[i].seg] = ranges[i].page_index;
  free(ranges);
  d->chunks = malloc(sizeof *d->chunks * (pages + 1));
  for (size_t i = 0; i < n; i++) {
    uint64_t p = segs[i].phys, end = segs[i].phys + segs[i].length;
    size_t idx = first_page[i];
    while (p < end) {
      size_t in_page = (size_t)(p % LB_PAGE), take = LB_PAGE - in_page;
      if (take > end - p) take = (size_t)(end - p);
      char *va = va_of[idx] + in_page;
      lb_chunk_t *last = d->nchunks ? &d->chunks[d->nchunks - 1] : NULL;
      if (last && last->va + last->len == va) last->len += take;
      else d->chunks[d->nchunks++] = (lb_chunk_t){va, take};
      p += take;
      idx++;
    }
  }
  free(first_page);
  free(va_of);
  return 0;
}

static inline void lb_detach(lb_device_t *d) {
  free(d->chunks);
  d->chunks = NULL;
  d->nchunks = 0;
}

/* the bytes of event `seq` of `size` bytes (header + payload) into ev */
static inline void lb_make_event(char *ev, size_t size, uint64_t seq, bool full_pattern) {
  if (full_pattern) {
    uint64_t x = seq * 0x9E3779B97F4A7C15ull + 1;
    size_t i = LB_HEADER;
    for (; i + 8 <= size; i += 8) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      memcpy(ev + i, &x, 8);
    }
    for (; i < size; i++) ev[i] = (char)(seq + i);
  }
  uint32_t sz = (uint32_t)size, magic = LB_MAGIC;
  memcpy(ev, &seq, 8);
  memcpy(ev + 8, &sz, 4);
  memcpy(ev + 12, &magic, 4);
}

/* a fixed payload for the bench (only the header changes per event) */
static inline void lb_fill_fixed(char *ev, size_t size) {
  for (size_t i = 0; i < size; i++) ev[i] = (char)(i * 7 + 3);
}

static inline size_t lb_slots(size_t total, size_t event) { return event && event <= total ? total / event : 0; }

/* the device writes `count` events of `size` bytes (ev is a scratch buffer of `size` bytes; with full_pattern
   every event is generated, else only its header is stamped into ev) through its own view, as a ring */
static inline void lb_write_events(lb_device_t *d, size_t size, uint64_t count, char *ev, bool full_pattern,
                            lb_copy_fn *copy) {
  if (size > d->total || size < LB_HEADER) return;
  for (uint64_t k = 0; k < count; k++) {
    if (d->pos + size > d->total) d->pos = 0, d->chunk = 0, d->chunk_off = 0;
    lb_make_event(ev, size, d->seq++, full_pattern);
    size_t left = size;
    const char *s = ev;
    while (left) {
      lb_chunk_t *c = &d->chunks[d->chunk];
      size_t room = c->len - d->chunk_off, take = left < room ? left : room;
      copy(c->va + d->chunk_off, s, take);
      s += take, left -= take, d->chunk_off += take;
      if (d->chunk_off == c->len) d->chunk++, d->chunk_off = 0;
    }
    d->pos += size;
  }
}

/* the consumer: checks events [first, first+count) of a ring of `total` bytes at `base` (every one must still be
   in the ring: count <= slots). Returns the number of bad events; *first_bad receives the first bad sequence. */
static inline size_t lb_check_events(const char *base, size_t total, size_t size, uint64_t first, uint64_t count,
                              bool full_pattern, uint64_t *first_bad) {
  size_t slots = lb_slots(total, size), bad = 0;
  if (!slots) return (size_t)count;
  char *ev = malloc(size);
  if (!full_pattern) lb_fill_fixed(ev, size);
  for (uint64_t k = first; k < first + count; k++) {
    lb_make_event(ev, size, k, full_pattern);
    if (memcmp(base + (k % slots) * size, ev, size) != 0) {
      if (!bad && first_bad) *first_bad = k;
      bad++;
    }
  }
  free(ev);
  return bad;
}
#endif
