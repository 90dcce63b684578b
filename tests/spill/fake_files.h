/* SPDX-License-Identifier: MIT */
/* fake_files.h: fixtures for the budget tests: files of a fake cgroup mount or /proc under a temporary root */
#ifndef SPILL_FAKE_FILES_H
#define SPILL_FAKE_FILES_H
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* writes `text` to root/rel, making its directories; false when it cannot */
static inline bool fake_put(const char *root, const char *rel, const char *text) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", root, rel);
  for (char *p = path + strlen(root) + 1; *p; p++)
    if (*p == '/') { *p = 0; mkdir(path, 0755); *p = '/'; }
  FILE *f = fopen(path, "w");
  if (!f) return false;
  fputs(text, f);
  return fclose(f) == 0;
}
#endif
