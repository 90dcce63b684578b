/* mallinfo_prog: mallinfo2 while blocks of each size range are live (small, the heap's large sizes, a block
   mapped on its own, many at once) answers sizes a program can use: no field wrapped below zero, the live bytes counted.
   Exit 1 naming the field. */
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check(const char *what, size_t live) {
  struct mallinfo2 m = mallinfo2();
  const size_t fields[] = {m.arena, m.ordblks, m.smblks, m.hblks, m.hblkhd, m.usmblks, m.fsmblks, m.uordblks,
                           m.fordblks, m.keepcost};
  const char *names[] = {"arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
                         "fordblks", "keepcost"};
  for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
    if (fields[i] > ((size_t)1 << 48)) {
      printf("FAIL: %s: mallinfo2().%s = %zu (wrapped below zero)\n", what, names[i], fields[i]);
      return 1;
    }
  if (m.uordblks + m.hblkhd < live) {
    printf("FAIL: %s: uordblks %zu + hblkhd %zu below the %zu live bytes\n", what, m.uordblks, m.hblkhd, live);
    return 1;
  }
  return 0;
}

int main(void) {
  static const size_t sizes[] = {100, 5000, 70000, 100000, 300000, 1 << 20, 3 << 20, 40 << 20};
  int bad = 0;
  /* first (while the heap maps little else), many blocks of its dense large sizes at once */
  enum { N = 64 };
  char *v[N];
  for (int i = 0; i < N; i++) {
    if (!(v[i] = malloc(300000))) return 2;
    memset(v[i], 1, 300000);
  }
  bad |= check("64 blocks of 300000 bytes live", (size_t)N * 300000);
  for (int i = 0; i < N; i++) free(v[i]);
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    char what[64];
    snprintf(what, sizeof what, "a block of %zu bytes live", sizes[i]);
    char *p = malloc(sizes[i]);
    if (!p) return 2;
    memset(p, 1, sizes[i]);
    bad |= check(what, sizes[i]);
    free(p);
  }
  if (!bad) puts("ok");
  return bad;
}
