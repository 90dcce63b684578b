/* SPDX-License-Identifier: MIT */
/* main.c: `memspace info | run | bench | version`. */
#include "tool.h"
#include "internal.h"
#include <errno.h>
#include <stdio.h>
#include <string.h>

/* The MEMSPACE_* variables are for the program `memspace run` starts, not for the tool's own copy of the library:
   no warning of its own (the program gives the one warning, docs/contract.md §3; `memspace info` marks invalid values),
   no process space, spill or exit statistics in the tool, and the space variables reach the program intact. */
const int msi_tool_process = 1;

static void usage(FILE *f) {
  fprintf(f, "usage: memspace info\n");
  tool_run_synopsis(f, "       ");
  fprintf(f, "       memspace bench PART [--out DIR] [--quick | --full]   (PART: pages spaces heap spill dma all)\n"
             "       memspace version\n");
}

static int command(int argc, char **argv) {
  if (argc < 2) { usage(stderr); return 2; }
  const char *cmd = argv[1];
  if (strcmp(cmd, "info") == 0) return tool_info(argc - 1, argv + 1);
  if (strcmp(cmd, "run") == 0) return tool_run(argc - 1, argv + 1);
  if (strcmp(cmd, "bench") == 0) return tool_bench(argc - 1, argv + 1);
  if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
    if (argc == 3 && (strcmp(argv[2], "--help") == 0 || strcmp(argv[2], "-h") == 0)) {
      printf("usage: memspace version\n");
      return 0;
    }
    if (argc > 2) {
      fprintf(stderr, "memspace version: unknown argument '%s' (it takes none)\nusage: memspace version\n", argv[2]);
      return 2;
    }
    int v = ms_version();
    printf("memspace %d.%d.%d\n", v / 10000, v / 100 % 100, v % 100);
    return 0;
  }
  if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) { usage(stdout); return 0; }
  fprintf(stderr, "memspace: unknown command '%s'\n", cmd);
  usage(stderr);
  return 2;
}

/* A report that could not be written (a full disk, a closed standard output) is an error, not a success with a
   truncated file: exit status 1 and the reason on stderr. */
int main(int argc, char **argv) {
  int status = command(argc, argv);
  if (fflush(stdout) != 0 || ferror(stdout)) {
    fprintf(stderr, "memspace: cannot write the output: %s\n", strerror(errno));
    return status ? status : 1;
  }
  return status;
}
