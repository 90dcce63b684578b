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

/* the byte a block with `seed` holds at offset i */
static inline uint8_t fz_pat(uint8_t seed, size_t i) { return (uint8_t)(seed + i * 31u + (i >> 9)); }

/* writes the pattern into [from, to) */
static inline void fz_fill(uint8_t *p, size_t from, size_t to, uint8_t seed) {
  for (size_t i = from; i < to; i++) p[i] = fz_pat(seed, i);
}

/* checks the pattern over [from, to); *bad receives the first wrong offset */
static inline bool fz_check(const uint8_t *p, size_t from, size_t to, uint8_t seed, size_t *bad) {
  for (size_t i = from; i < to; i++)
    if (p[i] != fz_pat(seed, i)) { *bad = i; return false; }
  return true;
}

static inline bool fz_zero(const uint8_t *p, size_t n, size_t *bad) {
  for (size_t i = 0; i < n; i++)
    if (p[i]) { *bad = i; return false; }
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
