/* two_copies_prog: linked with libmemspace.a; run with libmemspace.so preloaded as well (two_copies.sh). Prints the
   options its own copy read and whether its mallocs come from the process space when one is asked for. */
#include <memspace.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  ms_stats_t s;
  void *p = malloc(100);
  if (!p || ms_stats_get(&s, sizeof s) != 0) return 1;
  printf("space_initial=%lld show_stats=%lld\n", ms_option_get(MS_OPTION_SPACE_INITIAL),
         ms_option_get(MS_OPTION_SHOW_STATS));
  free(p);
  return 0;
}
