/* Helpers shared by the space tests. */
#ifndef SPACE_TEST_H
#define SPACE_TEST_H
#include <string.h>
#include "memspace.h"

/* a space named "test" with these sizes, `at` and flags (no NUMA preference) */
static inline ms_space_t *make(size_t initial, size_t expand, ms_space_at_t at, unsigned flags) {
  ms_space_config_t c;
  memset(&c, 0, sizeof c);
  c.initial_size = initial;
  c.expand_size = expand;
  c.at = at;
  c.flags = flags;
  c.numa_node = -1;
  c.name = "test";
  return ms_space_create(&c);
}
#endif
