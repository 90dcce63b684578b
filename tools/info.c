/* SPDX-License-Identifier: MIT */
/* info.c: `memspace info` (CONTRACT §2). Placeholder until the foundation work fills it in. */
#include "tool.h"
#include <stdio.h>
int tool_info(int argc, char **argv) {
  (void)argc, (void)argv;
  printf("memspace info: not implemented yet\n");
  return 0;
}
