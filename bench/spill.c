/* SPDX-License-Identifier: MIT */
/* spill.c: `memspace bench spill`. The workload lives in bench/spill/run.py (cgroups, swap file, R and Python
   programs, probes); this driver runs it, copies its 'ROW,' lines into
   spill.csv, its 'SECTION,NAME,SECONDS' lines into spill.cmd (section NAME: S s) and everything else to the
   screen. */
#include "bench.h"
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <unistd.h>

int msb_bench_spill(msb_ctx_t *ctx) {
  const char *mode = ctx->mode == MSB_QUICK ? "quick" : ctx->mode == MSB_FULL ? "full" : "default";
  char cmd[4 * (PATH_MAX * 4 + 8) + 64];
  /* Debian's python3 has python3-numpy; a python3 earlier on PATH (pyenv, venv) may not */
  const char *py = access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
  char q_lib[PATH_MAX * 4 + 8], q_run[PATH_MAX * 4 + 8], q_bin[PATH_MAX * 4 + 8], run[PATH_MAX + 32];
  if (snprintf(run, sizeof run, "%s/bench/spill/run.py", msb_source_dir()) >= (int)sizeof run) {
    msb_printf("spill: the source directory's path is too long\n");
    return 1;
  }
  snprintf(cmd, sizeof cmd, "MSB_LIB=%s %s -B %s %s %s 2>&1", msb_sh_quote(q_lib, sizeof q_lib, msb_memspace_lib()), py,
           msb_sh_quote(q_run, sizeof q_run, run), mode, msb_sh_quote(q_bin, sizeof q_bin, msb_binary_dir()));
  if (ctx->cmd) fprintf(ctx->cmd, "workload: %s\n", cmd);
  /* no machine lock taken here: `make bench` may itself run under it (flock /tmp/memspace-bench.lock) */
  FILE *p = popen(cmd, "r");
  if (!p) {
    msb_printf("spill: cannot run %s\n", cmd);
    return 1;
  }
  char line[4096];
  while (fgets(line, sizeof line, p)) {
    if (strncmp(line, "ROW,", 4) == 0) {
      char case_name[64], impl[64], metric[64];
      int threads;
      unsigned long long size;
      double value;
      if (sscanf(line + 4, "%63[^,],%63[^,],%d,%llu,%63[^,],%lf", case_name, impl, &threads, &size, metric,
                 &value) == 6)
        msb_row(ctx, case_name, impl, threads, size, metric, value);
    } else if (strncmp(line, "SECTION,", 8) == 0) {
      char name[64];
      double seconds;
      if (sscanf(line + 8, "%63[^,],%lf", name, &seconds) == 2) msb_section_line(ctx, name, seconds);
    } else {
      msb_printf("%s", line);
    }
  }
  int status = pclose(p);
  return status == 0 ? 0 : 1;
}
