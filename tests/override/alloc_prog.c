/* alloc_prog: a plain malloc program for run_modes.sh (no memspace headers: run under `memspace run`).
   alloc_prog mix MiB   blocks from 16 B to 8 MiB, MiB in all, written, checked, freed: exit 0 when intact
   alloc_prog big MiB   one block of MiB, first and last page written: exit 0 when malloc succeeded
   alloc_prog thp       a 4 MiB block: exit 0 when its mapping is advised for transparent huge pages (VmFlags hg) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int mix(size_t mib) {
  size_t total = mib << 20, used = 0, n = 0, cap = 1 << 16;
  unsigned char **v = malloc(cap * sizeof *v);
  size_t *len = malloc(cap * sizeof *len);
  if (!v || !len) return 1;
  uint32_t x = 1;
  while (used < total && n < cap) {
    x = x * 1103515245u + 12345u;
    size_t sz = (size_t)16 << (x >> 8) % 20; /* 16 B .. 8 MiB */
    if (sz > total - used) sz = total - used;
    v[n] = malloc(sz);
    if (!v[n]) { fprintf(stderr, "alloc_prog: malloc(%zu) failed after %zu bytes\n", sz, used); return 1; }
    memset(v[n], (int)(n & 0xff), sz);
    len[n++] = sz;
    used += sz;
  }
  for (size_t i = 0; i < n; i++) {
    if (v[i][0] != (unsigned char)(i & 0xff) || v[i][len[i] - 1] != (unsigned char)(i & 0xff)) return 1;
    free(v[i]);
  }
  free(v);
  free(len);
  return 0;
}

static int big(size_t mib) {
  size_t sz = mib << 20;
  unsigned char *p = malloc(sz);
  if (!p) { fprintf(stderr, "alloc_prog: malloc(%zu MiB) failed\n", mib); return 1; }
  p[0] = 1;
  p[sz - 1] = 2;
  free(p);
  return 0;
}

static int thp(void) {
  char *p = malloc(4u << 20);
  if (!p) return 1;
  memset(p, 1, 4u << 20);
  FILE *f = fopen("/proc/self/smaps", "r");
  if (!f) return 77;
  char line[512];
  int in = 0, found = 0;
  while (fgets(line, sizeof line, f)) {
    uintptr_t lo, hi;
    if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
      in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
      continue;
    }
    if (in && strncmp(line, "VmFlags:", 8) == 0) {
      found = strstr(line, " hg") != NULL;
      if (!found) fprintf(stderr, "alloc_prog: block %p: %s", (void *)p, line);
      break;
    }
  }
  fclose(f);
  free(p);
  return found ? 0 : 1;
}

int main(int argc, char **argv) {
  if (argc >= 3 && strcmp(argv[1], "mix") == 0) return mix(strtoul(argv[2], NULL, 10));
  if (argc >= 3 && strcmp(argv[1], "big") == 0) return big(strtoul(argv[2], NULL, 10));
  if (argc >= 2 && strcmp(argv[1], "thp") == 0) return thp();
  fprintf(stderr, "usage: alloc_prog mix MiB | big MiB | thp\n");
  return 2;
}
