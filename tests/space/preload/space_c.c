/* Run under LD_PRELOAD=libmemspace.so with a fixed process space (MEMSPACE_SPACE_INITIAL=8M, EXPAND=0):
   malloc fails with ENOMEM when the space is full, works again after frees; the settings were removed from
   the environment; calloc, realloc and aligned_alloc come from the space too. Prints "ok" and exits 0. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
  if (getenv("MEMSPACE_SPACE_INITIAL")) { printf("environment not cleared\n"); return 1; }
  enum { N = 4096 };
  static void *v[N];
  int n = 0;
  while (n < N) {
    void *p = malloc(64 << 10);
    if (!p) break;
    memset(p, 1, 64 << 10);
    v[n++] = p;
  }
  if (n == N) { printf("never ran out: not served by an 8 MiB space\n"); return 2; }
  if (errno != ENOMEM) { printf("errno %d, not ENOMEM\n", errno); return 3; }
  for (int i = 0; i < n; i++) free(v[i]);
  char *a = calloc(1000, 10);
  for (int i = 0; i < 10000; i++)
    if (a[i]) { printf("calloc not zeroed\n"); return 4; }
  a = realloc(a, 100000);
  if (!a || a[9999] != 0) { printf("realloc lost data\n"); return 5; }
  void *al = aligned_alloc(4096, 5000);
  if (!al || (uintptr_t)al % 4096) { printf("aligned_alloc\n"); return 6; }
  if (!malloc(1 << 20)) { printf("no recovery after frees\n"); return 7; }
  free(a);
  free(al);
  printf("ok %d\n", n);
  return 0;
}
