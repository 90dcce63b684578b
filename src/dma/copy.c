/* SPDX-License-Identifier: MIT */
/* copy.c: the streaming (non-temporal) copies behind ms_dma_write, ms_dma_stream and ms_dma_copy.
   x86-64: regular stores up to the first cache-line boundary of the destination, non-temporal stores (AVX2 when
   the CPU and the kernel support it, asked with cpuid/xgetbv at the first copy, else SSE2 which every x86-64
   has) for whole
   lines, regular stores for the tail. ms_dma_write ends with sfence so its data is globally visible when it
   returns; ms_dma_stream and ms_dma_copy leave the fence to ms_dma_fence, once per batch: an sfence after each
   short copy costs more than the copy itself.
   Short copies use memcpy (regular stores are ordered, no fence needed): below 256 bytes for the unfenced
   copies, below 2 KiB for the fenced one, where the fence costs more than the cache it saves.
   Other architectures: memcpy and a release fence. */
#include "internal.h"
#include <string.h>

#define SHORT_COPY 256         /* unfenced copies below this: memcpy */
#define SHORT_FENCED_COPY 2048 /* fenced copies below this: memcpy */
void msi_dma_copy_fenced(void *dst, const void *src, size_t length);

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>

/* a streaming loop of one vector width: four vectors a step, then one at a time (the caller copies the rest) */
#define STREAM_FN(name, vec, load, store)                                                                     \
  static void name(char *d, const char *s, size_t n) {                                                        \
    const size_t w = sizeof(vec);                                                                             \
    for (; n >= 4 * w; n -= 4 * w, d += 4 * w, s += 4 * w) {                                                  \
      vec a = load((const vec *)s), b = load((const vec *)(s + w));                                           \
      vec c = load((const vec *)(s + 2 * w)), e = load((const vec *)(s + 3 * w));                             \
      store((vec *)d, a), store((vec *)(d + w), b), store((vec *)(d + 2 * w), c), store((vec *)(d + 3 * w), e); \
    }                                                                                                         \
    for (; n >= w; n -= w, d += w, s += w) store((vec *)d, load((const vec *)s));                             \
  }
__attribute__((target("avx2"))) STREAM_FN(stream_avx2, __m256i, _mm256_loadu_si256, _mm256_stream_si256)
STREAM_FN(stream_sse2, __m128i, _mm_loadu_si128, _mm_stream_si128)

typedef void stream_fn(char *d, const char *s, size_t n);
static stream_fn *_Atomic stream_impl;

/* AVX2 in the CPU and its YMM state saved by the kernel. Not __builtin_cpu_supports: it links libgcc's
   __cpu_indicator_init, a constructor that runs a dozen cpuid instructions in every process the library is loaded
   into (each an exit to the hypervisor in a virtual machine) */
static bool cpu_has_avx2(void) {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE) || !(c & bit_AVX)) return false;
  unsigned lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  if ((lo & 6) != 6) return false; /* XMM and YMM state enabled */
  return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & bit_AVX2);
}

static stream_fn *pick(void) {
  stream_fn *f = atomic_load_explicit(&stream_impl, memory_order_relaxed);
  if (MSI_UNLIKELY(!f)) {
    f = cpu_has_avx2() ? stream_avx2 : stream_sse2;
    atomic_store_explicit(&stream_impl, f, memory_order_relaxed);
  }
  return f;
}

/* non-temporal copy, no fence; length >= 64 */
static void copy_nt(char *d, const char *s, size_t length) {
  size_t head = (size_t)(-(uintptr_t)d) & (MSI_CACHE_LINE - 1);
  msi_memcpy(d, s, head);
  d += head, s += head, length -= head;
  size_t body = length & ~(size_t)(MSI_CACHE_LINE - 1);
  pick()(d, s, body);
  if (length > body) msi_memcpy(d + body, s + body, length - body);
}

void ms_dma_copy(void *dst, const void *src, size_t length) {
  if (length < SHORT_COPY) {
    if (length) msi_memcpy(dst, src, length);
    return;
  }
  copy_nt(dst, src, length);
}

void ms_dma_fence(void) { _mm_sfence(); }

void msi_dma_copy_fenced(void *dst, const void *src, size_t length) {
  if (length < SHORT_FENCED_COPY) {
    if (length) msi_memcpy(dst, src, length);
    return;
  }
  copy_nt(dst, src, length);
  _mm_sfence();
}

#else
void ms_dma_copy(void *dst, const void *src, size_t length) {
  if (length) msi_memcpy(dst, src, length);
}

void ms_dma_fence(void) {
#if defined(__aarch64__)
  __asm__ __volatile__("dmb ishst" ::: "memory");
#else
  atomic_thread_fence(memory_order_seq_cst);
#endif
}

void msi_dma_copy_fenced(void *dst, const void *src, size_t length) {
  ms_dma_copy(dst, src, length);
  ms_dma_fence();
}
#endif
