/* ms_test.h: small helpers shared by the tests (include path tests/common, set by ms_unit_test). */
#ifndef MS_TEST_H
#define MS_TEST_H
#include <stdio.h>
#include <unistd.h>

/* resident bytes of this process, from /proc/self/statm; 0 when unreadable */
static inline size_t ms_test_rss_bytes(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  unsigned long pages = 0, res = 0;
  if (f) {
    if (fscanf(f, "%lu %lu", &pages, &res) != 2) res = 0;
    fclose(f);
  }
  return res * (size_t)sysconf(_SC_PAGESIZE);
}

/* mappings of this process (lines of /proc/self/maps); -1 when unreadable */
static inline int ms_test_mapping_count(void) {
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f) return -1;
  int n = 0, c;
  while ((c = getc(f)) != EOF) n += c == '\n';
  fclose(f);
  return n;
}
#endif
