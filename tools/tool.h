/* SPDX-License-Identifier: MIT */
/* tool.h: the memspace command-line tool's commands (docs/contract.md §2). */
#ifndef MS_TOOL_H
#define MS_TOOL_H
int tool_info(int argc, char **argv);
int tool_run(int argc, char **argv);
int tool_bench(int argc, char **argv);
#include <stdio.h>
/* `memspace run` with every option it takes, for the tool's usage text (each line starts with indent) */
void tool_run_synopsis(FILE *f, const char *indent);
#endif
