/* SPDX-License-Identifier: MIT */
/* dma.c: `memspace bench dma`, the PDA/physmem report's RAM test on memspace's DMA buffers.
   - Limits of the machine in the same run: memset and non-temporal store bandwidth on a large buffer, per page
     size.
   - Ring writes: the CPU writes events (200 B .. 1 MiB) into pinned buffers (20 MiB, 100 MiB, 1 GiB; 4 GiB with
     --full) on 4 KiB and 2 MiB pages, as a ring, with ms_dma_write (non-temporal), with memcpy, and through the
     loopback device (which finds the buffer from the scatter/gather list alone and writes with ms_dma_copy).
     The consumer checks the events left in the ring after each cell.
   - Translation: building the scatter/gather list of a 1 GiB buffer; entries and largest run.
   - Allocation: 1 GiB on 2 MiB pages against base pages.
   Huge pages are added to the pool for the run and given back at the end, on error paths and on SIGINT/SIGTERM.
   Timings: run under the machine lock (flock /tmp/memspace-bench.lock). */
#include "bench.h"
#include "memspace.h"
#include "dma/loopback.h"
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#define MiB (1024ull * 1024)
#define GiB (1024ull * MiB)
#define HP2 "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"

static const size_t events[] = {200, 1024, 4096, 16384, 65536, 262144, 1048576};
#define NEVENTS (sizeof events / sizeof events[0])
enum { M_NT = 0, M_BATCH, M_MEMCPY, M_LOOPBACK, NMETHODS };
static const char *method_case[NMETHODS] = {"nt", "ntbatch", "memcpy", "loopback"};
static const char *method_impl[NMETHODS] = {"memspace", "memspace", "glibc", "memspace"};
static const char *method_title[NMETHODS] = {
    "ms_dma_write (non-temporal, fence per event)", "ms_dma_stream (non-temporal, one ms_dma_fence per 64 KiB)",
    "memcpy (glibc)", "loopback device (list only; ms_dma_copy, fence per 64 KiB)"};
#define FENCE_EVERY (64 * 1024) /* a producer publishing its write pointer every 64 KiB */

/* ---- the hugetlb pool: added for the run, given back always ---- */
/* raw system calls only: pool_restore also runs from signal handlers */
static volatile long long pool_added;
static long long read_ll(const char *path) {
  char buf[32];
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return -1;
  long long v = 0;
  for (ssize_t i = 0; i < n && buf[i] >= '0' && buf[i] <= '9'; i++) v = v * 10 + (buf[i] - '0');
  return v;
}
static int write_ll(const char *path, long long v) {
  char buf[32], tmp[32];
  int n = 0, k = 0;
  do tmp[k++] = (char)('0' + v % 10), v /= 10; while (v > 0 && k < 30);
  while (k) buf[n++] = tmp[--k];
  buf[n++] = '\n';
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  int ok = write(fd, buf, (size_t)n) == n;
  return close(fd) == 0 && ok ? 0 : -1;
}
static void pool_restore(void) {
  if (pool_added <= 0) return;
  long long cur = read_ll(HP2), target = cur - pool_added;
  if (target < 0) target = 0;
  if (cur >= 0 && write_ll(HP2, target) == 0) pool_added = 0;
}
static void on_signal(int sig) {
  pool_restore();
  signal(sig, SIG_DFL);
  raise(sig);
}
/* adds `pages` 2 MiB pages; returns how many the kernel gave */
static long long pool_add(long long pages, char *why, size_t why_cap) {
  long long cur = read_ll(HP2);
  if (cur < 0) { snprintf(why, why_cap, "no 2 MiB huge pages in this kernel"); return 0; }
  static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL};
  atexit(pool_restore);
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) signal(sigs[i], on_signal);
  if (write_ll(HP2, cur + pages) != 0) {
    snprintf(why, why_cap, "writing %s refused: %s", HP2, strerror(errno));
    long long now = read_ll(HP2); /* a partial grant still has to be given back */
    pool_added = now > cur ? now - cur : 0;
    return pool_added;
  }
  long long now = read_ll(HP2);
  pool_added = now > cur ? now - cur : 0;
  if (pool_added < pages) snprintf(why, why_cap, "the kernel gave %lld of %lld pages", pool_added, pages);
  return pool_added;
}

/* ---- helpers ---- */
/* CPU seconds of this thread: on a shared 2-core machine the wall clock also counts time other processes ran;
   tables and targets use CPU time (kernel work on the thread's behalf, page zeroing included), the CSV has both */
static double cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
typedef struct { double wall, cpu; } span_t;
static span_t span_start(void) { return (span_t){msb_now(), cpu_now()}; }
static span_t span_end(span_t s) { return (span_t){msb_now() - s.wall, cpu_now() - s.cpu}; }

static double median_of(double *v, int n) { return msb_median(v, (size_t)n); }
static const char *page_tag(size_t page) { return page == 4096 ? "4k" : page == 2 * MiB ? "2m" : "1g"; }
static void size_tag(char *out, size_t cap, uint64_t bytes) {
  if (bytes >= GiB && bytes % GiB == 0) snprintf(out, cap, "%lluG", (unsigned long long)(bytes / GiB));
  else if (bytes >= MiB) snprintf(out, cap, "%lluM", (unsigned long long)(bytes / MiB));
  else if (bytes >= 1024) snprintf(out, cap, "%lluK", (unsigned long long)(bytes / 1024));
  else snprintf(out, cap, "%lluB", (unsigned long long)bytes);
}

static ms_dma_buffer_t *alloc_buf(size_t size, size_t page) {
  ms_dma_config_t c;
  memset(&c, 0, sizeof c);
  c.page_size = page;
  c.numa_node = -1;
  c.flags = MS_DMA_NO_FALLBACK;
  return ms_dma_alloc(size, &c);
}

#if defined(__x86_64__)
__attribute__((target("avx2"))) static void nt_fill_avx2(char *d, size_t n) {
  __m256i v = _mm256_set1_epi8(0x5a);
  for (size_t i = 0; i + 128 <= n; i += 128) {
    _mm256_stream_si256((__m256i *)(d + i), v);
    _mm256_stream_si256((__m256i *)(d + i + 32), v);
    _mm256_stream_si256((__m256i *)(d + i + 64), v);
    _mm256_stream_si256((__m256i *)(d + i + 96), v);
  }
  _mm_sfence();
}
static void nt_fill(char *d, size_t n) {
  if (__builtin_cpu_supports("avx2")) nt_fill_avx2(d, n);
  else memset(d, 0x5a, n);
}
#else
static void nt_fill(char *d, size_t n) { memset(d, 0x5a, n); }
#endif

/* ---- limits ---- */
typedef struct { double memset_gbs, nt_gbs; } limits_t;

static limits_t measure_limits(msb_ctx_t *ctx, size_t page, size_t size, int reps) {
  limits_t l = {0, 0};
  ms_dma_buffer_t *b = alloc_buf(size, page);
  if (!b) return l;
  char *p = ms_dma_addr(b);
  double ms[16], nt[16];
  char c1[64], c2[64];
  snprintf(c1, sizeof c1, "limit-memset-%s", page_tag(page));
  snprintf(c2, sizeof c2, "limit-ntstore-%s", page_tag(page));
  for (int r = 0; r < reps; r++) { /* interleaved rounds */
    span_t t = span_start();
    memset(p, r, size);
    span_t a = span_end(t);
    t = span_start();
    nt_fill(p, size);
    span_t b2 = span_end(t);
    ms[r] = (double)size / a.cpu / 1e9;
    nt[r] = (double)size / b2.cpu / 1e9;
    msb_row(ctx, c1, "glibc", 1, size, "gb_per_s", (double)size / a.wall / 1e9);
    msb_row(ctx, c1, "glibc", 1, size, "gb_per_cpu_s", ms[r]);
    msb_row(ctx, c2, "memspace", 1, size, "gb_per_s", (double)size / b2.wall / 1e9);
    msb_row(ctx, c2, "memspace", 1, size, "gb_per_cpu_s", nt[r]);
  }
  l.memset_gbs = median_of(ms, reps);
  l.nt_gbs = median_of(nt, reps);
  ms_dma_free(b);
  return l;
}

/* ---- ring writes ---- */
/* writes `count` events from sequence *seq on, as a ring; returns the time taken */
static span_t ring_write(int method, ms_dma_buffer_t *b, lb_device_t *dev, size_t e, uint64_t count, uint64_t *seq,
                         char *ev) {
  size_t total = ms_dma_size(b), slots = lb_slots(total, e);
  char *base = ms_dma_addr(b);
  span_t t0 = span_start();
  uint64_t per_fence = e >= FENCE_EVERY ? 1 : FENCE_EVERY / e;
  if (method == M_LOOPBACK) {
    for (uint64_t done = 0; done < count; done += per_fence) {
      lb_write_events(dev, e, count - done < per_fence ? count - done : per_fence, ev, false, ms_dma_copy);
      ms_dma_fence();
    }
    *seq += count;
  } else {
    uint64_t s = *seq, end = s + count, since = 0;
    size_t pos = (size_t)(s % slots) * e;
    for (; s < end; s++) {
      lb_make_event(ev, e, s, false); /* stamps the 16-byte header into the cache-hot event */
      if (method == M_NT) ms_dma_write(b, pos, ev, e);
      else if (method == M_BATCH) {
        ms_dma_stream(b, pos, ev, e);
        if (++since == per_fence) ms_dma_fence(), since = 0;
      } else memcpy(base + pos, ev, e);
      pos += e;
      if (pos + e > total) pos = 0;
    }
    if (method == M_BATCH) ms_dma_fence();
    *seq = end;
  }
  return span_end(t0);
}

typedef struct {
  double gbs[NMETHODS][NEVENTS];
  size_t bad;   /* events found wrong by the consumer, all cells */
  int have[NMETHODS];
} cells_t;

static void measure_buffer(msb_ctx_t *ctx, size_t page, size_t size, uint64_t per_rep_bytes, int reps, bool phys,
                           cells_t *out) {
  memset(out, 0, sizeof *out);
  ms_dma_buffer_t *b = alloc_buf(size, page);
  if (!b) {
    msb_printf("  (buffer of %zu bytes on %s pages not allocated: %s)\n", size, page_tag(page), strerror(errno));
    return;
  }
  char *ev = malloc(1 * MiB);
  lb_fill_fixed(ev, 1 * MiB);
  memset(ms_dma_addr(b), 0, size);
  lb_device_t dev;
  bool have_dev = false;
  if (phys) {
    size_t n;
    const ms_dma_segment_t *s = ms_dma_segments(b, &n);
    have_dev = s && lb_attach(&dev, s, n) == 0;
    if (!have_dev && s) msb_printf("  loopback device rejected the list: %s\n", dev.error);
  }
  char cs[96], tag[16];
  size_tag(tag, sizeof tag, size);
  for (int m = 0; m < NMETHODS; m++) {
    if (m == M_LOOPBACK && !have_dev) continue;
    out->have[m] = 1;
    snprintf(cs, sizeof cs, "ring-%s-%s-%s", method_case[m], page_tag(page), tag);
    for (size_t k = 0; k < NEVENTS; k++) {
      size_t e = events[k];
      if (e > size) continue;
      uint64_t count = per_rep_bytes / e, seq = 0;
      double g[16];
      if (m == M_LOOPBACK) { /* a fresh ring for the device */
        dev.pos = dev.chunk = dev.chunk_off = 0;
        dev.seq = 0;
      }
      ring_write(m, b, &dev, e, lb_slots(size, e) < count ? lb_slots(size, e) : count, &seq, ev); /* warm-up */
      for (int r = 0; r < reps; r++) {
        span_t t = ring_write(m, b, &dev, e, count, &seq, ev);
        g[r] = (double)(count * e) / t.cpu / 1e9;
        msb_row(ctx, cs, method_impl[m], 1, e, "gb_per_s", (double)(count * e) / t.wall / 1e9);
        msb_row(ctx, cs, method_impl[m], 1, e, "gb_per_cpu_s", g[r]);
      }
      out->gbs[m][k] = median_of(g, reps);
      /* the consumer: every event still in the ring */
      size_t slots = lb_slots(size, e);
      uint64_t keep = seq < slots ? seq : slots, first_bad = 0;
      size_t bad = lb_check_events(ms_dma_addr(b), size, e, seq - keep, keep, false, &first_bad);
      msb_row(ctx, cs, method_impl[m], 1, e, "events_bad", (double)bad);
      if (bad) msb_printf("  consumer: %zu of %llu events wrong (%s, event %zu), first seq %llu\n", bad,
                          (unsigned long long)keep, cs, e, (unsigned long long)first_bad);
      out->bad += bad;
    }
  }
  if (have_dev) lb_detach(&dev);
  free(ev);
  ms_dma_free(b);
}

/* ---- translation and allocation ---- */
typedef struct { double build_s, verify_s; size_t entries, largest; bool ok; } xlate_t;

static xlate_t measure_translation(msb_ctx_t *ctx, size_t page, size_t size, int reps) {
  xlate_t x = {0, 0, 0, 0, false};
  ms_dma_buffer_t *b = alloc_buf(size, page);
  if (!b) return x;
  span_t t0 = span_start();
  size_t n;
  const ms_dma_segment_t *s = ms_dma_segments(b, &n);
  span_t bt = span_end(t0);
  x.build_s = bt.cpu;
  if (!s) { ms_dma_free(b); return x; }
  double v[16], vw[16];
  for (int r = 0; r < reps; r++) {
    t0 = span_start();
    ms_dma_verify(b, NULL);
    span_t t = span_end(t0);
    v[r] = t.cpu, vw[r] = t.wall;
  }
  ms_dma_info_t info;
  ms_dma_info(b, &info);
  x.entries = info.segments;
  x.largest = info.largest_segment;
  char cs[64];
  snprintf(cs, sizeof cs, "translate-%s", page_tag(page));
  msb_row(ctx, cs, "memspace", 1, size, "build_s", bt.wall);
  msb_row(ctx, cs, "memspace", 1, size, "build_cpu_s", bt.cpu);
  for (int r = 0; r < reps; r++) {
    msb_row(ctx, cs, "memspace", 1, size, "verify_s", vw[r]);
    msb_row(ctx, cs, "memspace", 1, size, "verify_cpu_s", v[r]);
  }
  msb_row(ctx, cs, "memspace", 1, size, "entries", (double)x.entries);
  msb_row(ctx, cs, "memspace", 1, size, "largest_run_bytes", (double)x.largest);
  x.verify_s = median_of(v, reps);
  x.ok = true;
  ms_dma_free(b);
  return x;
}

static void measure_alloc(msb_ctx_t *ctx, size_t size, int reps, double *t2m, double *t4k) {
  double a[2][16];
  size_t pages[2] = {2 * MiB, 4096};
  int got[2] = {0, 0};
  for (int r = 0; r < reps; r++)
    for (int k = 0; k < 2; k++) { /* interleaved */
      span_t t0 = span_start();
      ms_dma_buffer_t *b = alloc_buf(size, pages[k]);
      span_t ta = span_end(t0);
      if (!b) continue;
      t0 = span_start();
      ms_dma_free(b);
      span_t tf = span_end(t0);
      a[k][got[k]++] = ta.cpu;
      char cs[64];
      snprintf(cs, sizeof cs, "alloc-%s", page_tag(pages[k]));
      msb_row(ctx, cs, "memspace", 1, size, "alloc_s", ta.wall);
      msb_row(ctx, cs, "memspace", 1, size, "alloc_cpu_s", ta.cpu);
      msb_row(ctx, cs, "memspace", 1, size, "free_s", tf.wall);
    }
  *t2m = got[0] ? median_of(a[0], got[0]) : 0;
  *t4k = got[1] ? median_of(a[1], got[1]) : 0;
}

static long long mem_available(void) {
  FILE *f = fopen("/proc/meminfo", "r");
  char line[256];
  long long kb = -1;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "MemAvailable: %lld kB", &kb) == 1) break;
  if (f) fclose(f);
  return kb < 0 ? -1 : kb * 1024;
}

/* ---- the driver ---- */
int msb_bench_dma(msb_ctx_t *ctx) {
  bool quick = ctx->mode == MSB_QUICK, full = ctx->mode == MSB_FULL;
  size_t bufs[4] = {20 * MiB, 100 * MiB, 1 * GiB, 4 * GiB};
  int nbufs = 3;
  size_t big = 1 * GiB;                                  /* limits, translation, allocation */
  uint64_t per_rep = 1 * GiB;                            /* bytes written per measurement (max(buffer, 1 GiB)) */
  int reps = 3;
  if (quick) nbufs = 2, big = 128 * MiB, per_rep = 64 * MiB, reps = 2;
  long long avail = mem_available();
  if (full) {
    if (avail > (long long)(9 * GiB)) nbufs = 4;
    else msb_printf("(--full: %lld MiB available, 4 GiB buffers need 9 GiB with the pool: left out)\n", avail >> 20);
  }
  size_t largest = bufs[nbufs - 1] > big ? bufs[nbufs - 1] : big;
  char why[256] = "";
  long long want = (long long)(largest / (2 * MiB)) + 4;
  long long got = pool_add(want, why, sizeof why);
  bool have2m = got >= want;
  if (!have2m) msb_printf("(2 MiB pages: %s; 2 MiB columns left out)\n", why);
  bool phys = false;
  {
    ms_dma_buffer_t *b = alloc_buf(4096, 4096);
    size_t n;
    phys = b && ms_dma_segments(b, &n);
    if (!phys) msb_printf("(physical addresses not readable here (no CAP_SYS_ADMIN): translation and the loopback "
                          "device are left out)\n");
    ms_dma_free(b);
  }
  fprintf(ctx->cmd, "dma: pool_added_2m_pages=%lld phys_readable=%d reps=%d bytes_per_measurement=%llu\n", got, phys,
          reps, (unsigned long long)per_rep);
  size_t pages[2] = {4096, 2 * MiB};
  int npages = have2m ? 2 : 1;

  /* the machine's limits ("section NAME: S s" lines in dma.cmd: limits, ring, translation, alloc) */
  msb_section(ctx, "limits");
  limits_t lim[2] = {{0, 0}, {0, 0}};
  for (int p = 0; p < npages; p++) lim[p] = measure_limits(ctx, pages[p], big, reps);
  char tag[16];
  size_tag(tag, sizeof tag, big);
  msb_printf("\nLimits on a %s buffer (median of %d; GB per CPU-second of the writing thread, 1e9 B; wall-clock "
             "figures in the CSV):\n", tag, reps);
  msb_printf("  %-6s %10s %12s\n", "pages", "memset", "NT stores");
  for (int p = 0; p < npages; p++)
    if (lim[p].memset_gbs > 0)
      msb_printf("  %-6s %10.1f %12.1f\n", page_tag(pages[p]), lim[p].memset_gbs, lim[p].nt_gbs);
    else
      msb_printf("  %-6s %10s %12s   (buffer not allocated)\n", page_tag(pages[p]), "-", "-");
  msb_row(ctx, "ring-published-peak", "pda-published", 1, 4096, "gb_per_s", 18.0);

  /* ring writes */
  msb_section(ctx, "ring");
  cells_t cells[2][4];
  size_t bad = 0;
  for (int p = 0; p < npages; p++)
    for (int i = 0; i < nbufs; i++) {
      measure_buffer(ctx, pages[p], bufs[i], per_rep > bufs[i] ? per_rep : bufs[i], reps, phys, &cells[p][i]);
      bad += cells[p][i].bad;
    }
  size_tag(tag, sizeof tag, per_rep);
  for (int m = 0; m < NMETHODS; m++) {
    if (!cells[0][0].have[m]) continue;
    msb_printf("\nRing writes, %s: GB per CPU-s (x memset on the same pages), median of %d, >= %s per measurement\n",
               method_title[m], reps, tag);
    msb_printf("  %-8s", "event");
    for (int p = 0; p < npages; p++)
      for (int i = 0; i < nbufs; i++) {
        char t[16], h[32];
        size_tag(t, sizeof t, bufs[i]);
        snprintf(h, sizeof h, "%s %s", page_tag(pages[p]), t);
        msb_printf(" %14s", h);
      }
    msb_printf("\n");
    for (size_t k = 0; k < NEVENTS; k++) {
      char t[16];
      size_tag(t, sizeof t, events[k]);
      msb_printf("  %-8s", t);
      for (int p = 0; p < npages; p++)
        for (int i = 0; i < nbufs; i++) {
          double g = cells[p][i].gbs[m][k];
          if (g > 0) msb_printf("  %5.1f (%4.2fx)", g, lim[p].memset_gbs > 0 ? g / lim[p].memset_gbs : 0);
          else msb_printf(" %14s", "-");
        }
      msb_printf("\n");
    }
  }
  msb_printf("\nConsumer check: %zu wrong events in all cells%s\n", bad, bad ? " (FAILED)" : "");
  msb_printf("Seed (PDA/physmem report, 2015 hardware, 2 MB pages): peak ~18 GB/s near 4 KB events "
             "(pda-published)\n");

  /* translation */
  msb_section(ctx, "translation");
  xlate_t xl[2] = {{0, 0, 0, 0, false}, {0, 0, 0, 0, false}};
  if (phys) {
    size_tag(tag, sizeof tag, big);
    msb_printf("\nScatter/gather list of a %s buffer, CPU ms (first build; re-translate-and-compare median of %d):\n", tag,
               reps);
    msb_printf("  %-6s %10s %12s %10s %14s\n", "pages", "build ms", "verify ms", "entries", "largest run");
    char lr[16];
    for (int p = 0; p < npages; p++) {
      xl[p] = measure_translation(ctx, pages[p], big, reps);
      size_tag(lr, sizeof lr, xl[p].largest);
      if (xl[p].ok)
        msb_printf("  %-6s %10.3f %12.3f %10zu %14s\n", page_tag(pages[p]), xl[p].build_s * 1e3,
                   xl[p].verify_s * 1e3, xl[p].entries, lr);
    }
  }

  /* allocation */
  msb_section(ctx, "alloc");
  double t2m = 0, t4k = 0;
  if (have2m) {
    measure_alloc(ctx, big, quick ? 2 : 3, &t2m, &t4k);
    size_tag(tag, sizeof tag, big);
    msb_printf("\nAllocating a pinned %s buffer (median CPU time): 2 MiB pages %.1f ms, base pages %.1f ms (%.2fx)\n", tag,
               t2m * 1e3, t4k * 1e3, t4k > 0 ? t2m / t4k : 0);
  }

  /* targets */
  msb_section(ctx, NULL);
  msb_printf("\nTargets:\n");
  if (have2m && lim[1].memset_gbs > 0) {
    for (int m = M_NT; m <= M_BATCH; m++) {
      double worst = 1e9;
      size_t we = 0, wb = 0;
      for (int i = 0; i < nbufs; i++) {
        if (bufs[i] < 100 * MiB) continue;
        for (size_t k = 0; k < NEVENTS; k++) {
          double g = cells[1][i].gbs[m][k];
          if (events[k] >= 1024 && g > 0 && g / lim[1].memset_gbs < worst)
            worst = g / lim[1].memset_gbs, we = events[k], wb = bufs[i];
        }
      }
      if (worst > 1e8) continue;
      char te[16], tb[16], cs[64];
      size_tag(te, sizeof te, we), size_tag(tb, sizeof tb, wb);
      msb_printf("  %s  %s writes >= 1 KiB into 2 MiB-page buffers >= 100 MiB reach >= 0.9x memset (%.1f GB/s): "
                 "worst %.2fx (%s events, %s buffer)%s\n", m == M_NT ? "info" : worst >= 0.9 ? "PASS" : "MISS",
                 m == M_NT ? "ms_dma_write" : "ms_dma_stream", lim[1].memset_gbs, worst, te, tb,
                 m == M_NT ? " [fence per event: not the target's path]" : " [one fence per 64 KiB]");
      snprintf(cs, sizeof cs, "target-%s-vs-memset", method_case[m]);
      msb_row(ctx, cs, "memspace", 1, 0, "worst_x", worst);
    }
  } else {
    msb_printf("  ----  NT writes vs memset on 2 MiB pages: not measured (no 2 MiB pages)\n");
  }
  if (xl[1].ok) {
    bool pass = xl[1].entries <= (big / (2 * MiB)) && xl[1].verify_s < 1e-3 * ((double)big / (double)GiB);
    size_tag(tag, sizeof tag, big);
    msb_printf("  %s  list of %s on 2 MiB pages: %zu entries (<= %llu) built in %.3f ms, re-translated in %.3f ms "
               "(< %.2f ms)\n", pass ? "PASS" : "MISS", tag, xl[1].entries, (unsigned long long)(big / (2 * MiB)),
               xl[1].build_s * 1e3, xl[1].verify_s * 1e3, (double)big / (double)GiB);
  } else {
    msb_printf("  ----  list of 2 MiB pages: not measured\n");
  }
  if (t2m > 0 && t4k > 0) {
    msb_printf("  %s  %s on 2 MiB pages allocated in <= 0.5x the base-page path: %.2fx (%.1f vs %.1f ms)\n",
               t2m <= 0.5 * t4k ? "PASS" : "MISS", tag, t2m / t4k, t2m * 1e3, t4k * 1e3);
    msb_row(ctx, "target-alloc-2m-vs-4k", "memspace", 1, big, "time_x", t2m / t4k);
  } else {
    msb_printf("  ----  allocation 2 MiB vs base pages: not measured\n");
  }
  pool_restore();
  return bad ? 1 : 0;
}
