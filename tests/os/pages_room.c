/* pages_room TOUCH_MIB RESERVE_MIB FLAGS: run by pages_cgroup.py inside a small memory cgroup. Touches TOUCH_MIB
   of its own memory first (a working set the cgroup counts), then ms_pages_reserve(RESERVE_MIB, FLAGS: populate,
   lock or both) and prints "reserved" or "refused: <error>". A library that faults in more than the cgroup holds
   gets this process OOM-killed (only it: the cgroup's OOM killer), which the script reports. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "memspace.h"

int main(int argc, char **argv) {
  if (argc != 4) return 2;
  size_t touch = (size_t)strtoull(argv[1], NULL, 10) << 20, size = (size_t)strtoull(argv[2], NULL, 10) << 20;
  unsigned flags = (strstr(argv[3], "populate") ? MS_PAGES_POPULATE : 0) | (strstr(argv[3], "lock") ? MS_PAGES_LOCK : 0);
  if (touch) {
    char *w = mmap(NULL, touch, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (w == MAP_FAILED) return 3;
    memset(w, 1, touch);
  }
  ms_pages_t p;
  int r = ms_pages_reserve(size, 0, flags, -1, &p);
  if (r) printf("refused: %s\n", strerror(r));
  else printf("reserved %zu bytes\n", p.size);
  return 0;
}
