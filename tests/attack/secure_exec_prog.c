/* secure_exec_prog: the options it runs with and whether a 1 MiB malloc succeeds, one line on stdout. Linked
   with libmemspace.a; secure_exec.sh runs a setuid copy of it (secure-execution mode, AT_SECURE) with MEMSPACE_*
   variables an unprivileged caller could set. */
#include <memspace.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

int main(void) {
  const char *dir = ms_option_get_string(MS_OPTION_SPILL_DIR), *file = ms_option_get_string(MS_OPTION_STATS_FILE);
  char *p = malloc(1 << 20);
  if (p) memset(p, 1, 1 << 20);
  printf("at_secure=%lu space_initial=%lld spill_threshold=%lld verbose=%lld show_stats=%lld spill_dir=%s "
         "stats_file=%s malloc=%s\n",
         getauxval(AT_SECURE), ms_option_get(MS_OPTION_SPACE_INITIAL), ms_option_get(MS_OPTION_SPILL_THRESHOLD),
         ms_option_get(MS_OPTION_VERBOSE), ms_option_get(MS_OPTION_SHOW_STATS), dir ? dir : "-", file ? file : "-",
         p ? "ok" : "NULL");
  free(p);
  return 0;
}
