/* docs/linking.md: a program linked with libmemspace (shared or static) gets memspace's malloc, free and new for
   every allocation, with no LD_PRELOAD: the block's usable size and the heap's statistics show it. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <malloc.h>
#include "memspace.h"

int main(void) {
  ms_stats_t before, after;
  memset(&before, 0, sizeof before);
  memset(&after, 0, sizeof after);
  if (ms_stats_get(&before, sizeof before) != 0) return 2;
  char *p = malloc(1000);
  if (!p) return 3;
  memset(p, 1, 1000);
  if (ms_stats_get(&after, sizeof after) != 0) return 4;
  if (after.heap_allocated_bytes < before.heap_allocated_bytes + 1000) {
    fprintf(stderr, "malloc(1000) did not reach memspace's heap (%llu -> %llu bytes)\n",
            (unsigned long long)before.heap_allocated_bytes, (unsigned long long)after.heap_allocated_bytes);
    return 1;
  }
  if (malloc_usable_size(p) != ms_usable_size(p)) {
    fprintf(stderr, "malloc_usable_size is not memspace's\n");
    return 1;
  }
  free(p);
  puts("malloc served by memspace");
  return 0;
}
