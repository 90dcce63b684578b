/* fuzz_common.h: what the heap and space fuzzers share: an input reader, block patterns, checks. */
#ifndef MS_FUZZ_COMMON_H
#define MS_FUZZ_COMMON_H
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAIL(...) do { fprintf(stderr, "%s: ", __FILE__); fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); abort(); } while (0)

typedef struct { const uint8_t *p; size_t n; } fz_in_t;
static inline bool fz_more(const fz_in_t *in) { return in->n > 0; }
static inline uint8_t fz_u8(fz_in_t *in) {
  if (!in->n) return 0;
  in->n--;
  return *in->p++;
}
static inline uint16_t fz_u16(fz_in_t *in) { uint16_t a = fz_u8(in); return (uint16_t)(a | fz_u8(in) << 8); }

/* a size drawn mostly small, sometimes page-sized, rarely megabytes */
static inline size_t fz_size(fz_in_t *in, size_t large_max) {
  uint8_t c = fz_u8(in);
  size_t v = fz_u16(in);
  switch (c % 8) {
  case 0: case 1: case 2: return v % 129;
  case 3: return v % 1025;
  case 4: return v % 4097 + (c & 0x80 ? 4096 - 64 : 0);
  case 5: return (v % 17) * 4096 + (c >> 4) - 8 + 8;  /* near page multiples */
  case 6: return v * 4 % 262145;
  default: return c & 0x80 ? ((size_t)v << 6) % (large_max + 1) : v;
  }
}

/* The pattern a block with `seed` holds: byte i is fz_tab[(i + seed * 17) % 4096]. Filled and checked with
   memcpy/memcmp in runs, so the coverage instrumentation of byte loops does not slow the fuzzers down. */
#define FZ_PERIOD 4096
static uint8_t fz_tab[2 * FZ_PERIOD];
static inline const uint8_t *fz_run(uint8_t seed, size_t i, size_t *len) {
  if (!fz_tab[1])
    for (size_t k = 0; k < 2 * FZ_PERIOD; k++) fz_tab[k] = (uint8_t)(k * 31 + (k % FZ_PERIOD >> 9) + 1);
  *len = FZ_PERIOD;  /* fz_tab holds two periods: any offset has a full period after it */
  return fz_tab + (i + (size_t)seed * 17) % FZ_PERIOD;
}

/* writes the pattern into [from, to) */
static inline void fz_fill(uint8_t *p, size_t from, size_t to, uint8_t seed) {
  for (size_t i = from, len; i < to; i += len) {
    const uint8_t *src = fz_run(seed, i, &len);
    if (len > to - i) len = to - i;
    memcpy(p + i, src, len);
  }
}

/* checks the pattern over [from, to); *bad receives the first wrong offset */
static inline bool fz_check(const uint8_t *p, size_t from, size_t to, uint8_t seed, size_t *bad) {
  for (size_t i = from, len; i < to; i += len) {
    const uint8_t *src = fz_run(seed, i, &len);
    if (len > to - i) len = to - i;
    if (memcmp(p + i, src, len) != 0) {
      size_t k = 0;
      while (p[i + k] == src[k]) k++;
      *bad = i + k;
      return false;
    }
  }
  return true;
}

/* is [p, p+n) all zero? */
static inline bool fz_zero(const uint8_t *p, size_t n, size_t *bad) {
  static const uint8_t zeros[FZ_PERIOD];
  for (size_t i = 0, len; i < n; i += len) {
    len = n - i < FZ_PERIOD ? n - i : FZ_PERIOD;
    if (memcmp(p + i, zeros, len) != 0) {
      size_t k = 0;
      while (!p[i + k]) k++;
      *bad = i + k;
      return false;
    }
  }
  return true;
}

/* the blocks a fuzzer holds: pointer, bytes written, pattern seed */
#define SLOTS 48
typedef struct { uint8_t *p; size_t size; uint8_t seed; } slot_t;
static slot_t slots[SLOTS];

static inline void verify(int i, const char *when) {
  size_t bad;
  if (slots[i].p && !fz_check(slots[i].p, 0, slots[i].size, slots[i].seed, &bad))
    FAIL("%s: block %p (%zu bytes) corrupted at offset %zu", when, (void *)slots[i].p, slots[i].size, bad);
}

static inline void verify_all(const char *when) {
  for (int i = 0; i < SLOTS; i++) verify(i, when);
}
#endif
