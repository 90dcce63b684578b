/* contract_probe: an unchanged program (it does not link memspace) that test_contract.sh runs under
   `memspace run` or LD_PRELOAD to see what docs/contract.md §3's variables did. It finds memspace's functions with dlsym.
     contract_probe SIZE        malloc(SIZE), then prints: where=spill|space|heap|libc errno=E dir=DIR
                                (dir: directory of the file behind a spilled block, from /proc/self/maps)
     contract_probe fill STEP   mallocs STEP bytes until NULL (at most 4 GiB): prints filled=BYTES errno=E
     contract_probe locked      before any allocation of its own: prints locked_kb=N (VmLck of /proc/self/status),
                                with read and write alone (no stdio, no malloc)
     contract_probe hugetlb     32 MiB in 64 KiB blocks and one 16 MiB block, written: prints hugetlb_kb=N (the
                                HugetlbPages of /proc/self/status: memory of hugetlb pages the process maps) */
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include "memspace.h" /* types only: the probe does not link memspace */

typedef int is_fn(const void *);

/* the directory of the file mapped at p, or "-" */
static void mapped_dir(const void *p, char *out, size_t cap) {
  snprintf(out, cap, "-");
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f) return;
  char line[4096];
  while (fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    if (sscanf(line, "%lx-%lx", &lo, &hi) != 2 || (uintptr_t)p < lo || (uintptr_t)p >= hi) continue;
    char *path = strchr(line, '/');
    if (path) {
      path[strcspn(path, "\n")] = 0;
      char *slash = strrchr(path, '/');
      if (slash == path) slash[1] = 0;
      else *slash = 0;
      snprintf(out, cap, "%s", path);
    }
    break;
  }
  fclose(f);
}

/* a "Name:   N kB" line of /proc/self/status, printed as KEY=N, read without an allocation (the process space at
   firstalloc is committed by the first one) */
static int status_kb(const char *name, const char *key) {
  static char buf[8192];
  int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 2;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  buf[n > 0 ? n : 0] = 0;
  const char *l = strstr(buf, name);
  long kb = -1;
  if (l) for (l += strlen(name), kb = 0; *l == ' ' || *l == '\t' || (*l >= '0' && *l <= '9'); l++)
    if (*l >= '0' && *l <= '9') kb = kb * 10 + (*l - '0');
  char out[64];
  int len = snprintf(out, sizeof out, "%s=%ld\n", key, kb); /* (snprintf into a buffer: no allocation) */
  return write(1, out, (size_t)len) == len ? 0 : 1;
}

int main(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "locked") == 0) return status_kb("VmLck:", "locked_kb");
  if (argc == 2 && strcmp(argv[1], "hugetlb") == 0) {
    for (int i = 0; i < 512; i++) {
      char *b = malloc(64 << 10);
      if (b) memset(b, 1, 64 << 10);
    }
    char *big = malloc(16 << 20);
    if (big) memset(big, 1, 16 << 20);
    return status_kb("HugetlbPages:", "hugetlb_kb");
  }
  is_fn *ours = (is_fn *)dlsym(RTLD_DEFAULT, "ms_is_ours");
  is_fn *spilled = (is_fn *)dlsym(RTLD_DEFAULT, "ms_spill_is");
  int (*stats_get)(ms_stats_t *, size_t) = (int (*)(ms_stats_t *, size_t))dlsym(RTLD_DEFAULT, "ms_stats_get");
  if (argc == 3 && strcmp(argv[1], "fill") == 0) {
    size_t step = strtoull(argv[2], NULL, 0), total = 0;
    void *p;
    errno = 0;
    while (total < ((size_t)4 << 30) && (p = malloc(step)) != NULL) total += step;
    printf("filled=%zu errno=%d\n", total, total < ((size_t)4 << 30) ? errno : 0);
    return 0;
  }
  if (argc != 2) {
    fprintf(stderr, "usage: contract_probe SIZE | fill STEP\n");
    return 2;
  }
  size_t size = strtoull(argv[1], NULL, 0);
  static ms_stats_t before, after; /* static: the probe's own mallocs stay out of the figures */
  if (stats_get) stats_get(&before, sizeof before);
  errno = 0;
  char *p = malloc(size);
  int e = errno;
  if (!p) {
    printf("where=none errno=%d dir=-\n", e);
    return 0;
  }
  if (stats_get) stats_get(&after, sizeof after);
  memset(p, 1, size < 4096 ? size : 4096);
  /* the process space and the heap are both "ours": a space block raises the spaces' used bytes */
  const char *where = "libc";
  if (ours && ours(p)) {
    if (spilled && spilled(p)) where = "spill";
    else if (after.space_used_bytes > before.space_used_bytes) where = "space";
    else where = "heap";
  }
  char dir[4096];
  mapped_dir(p, dir, sizeof dir);
  printf("where=%s errno=%d dir=%s\n", where, e, dir);
  return 0;
}
