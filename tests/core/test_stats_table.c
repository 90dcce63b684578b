/* Statistics, one table (src/internal/stats.def): every row documented in docs/stats.md under its section, every
   ms_stats_t counter of include/memspace.h has a row, every line ms_stats_print writes is a row (and every row
   with a field is printed); sections print only once their part is used; JSON values are numbers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "internal.h"
#include "ms_test.h"

typedef struct { const char *section, *name, *field, *unit; } row_t;
#define F(member) #member
#define NOFIELD ""
static const row_t rows[] = {
#define X(section, name, field, unit, doc) {#section, name, field, #unit},
#include "stats.def"
#undef X
};

static char *read_whole(const char *rel) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", MEMSPACE_SOURCE_DIR, rel);
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  static char bufs[2][1 << 17];
  static int which;
  char *b = bufs[which++ & 1];
  size_t n = fread(b, 1, sizeof bufs[0] - 1, f);
  b[n] = 0;
  fclose(f);
  return b;
}

static void rows_documented(void **state) {
  (void)state;
  const char *doc = read_whole("docs/stats.md");
  for (size_t i = 0; i < MSI_ARRAY_LEN(rows); i++) {
    char head[64], cell[96];
    snprintf(head, sizeof head, "\n## [%s]", rows[i].section);
    const char *sec = strstr(doc, head);
    if (!sec) { fail_msg("docs/stats.md has no section [%s]", rows[i].section); return; }
    const char *end = strstr(sec + 1, "\n## ");
    if (!end) end = sec + strlen(sec);
    snprintf(cell, sizeof cell, "\n| `%s`", rows[i].name);
    const char *hit = strstr(sec, cell);
    if (!hit || hit > end) { /* also a row naming several lines: | `a`, `b` | */
      snprintf(cell, sizeof cell, ", `%s`", rows[i].name);
      hit = strstr(sec, cell);
    }
    if (!hit || hit > end) fail_msg("docs/stats.md [%s] does not document `%s`", rows[i].section, rows[i].name);
    if (*rows[i].field) { /* the field column names the member */
      snprintf(cell, sizeof cell, "`%s`", rows[i].field);
      const char *f = strstr(hit, cell);
      const char *eol = strchr(hit + 1, '\n');
      if (!f || f > eol) fail_msg("docs/stats.md: `%s` should name field %s", rows[i].name, rows[i].field);
    }
  }
}

static bool field_in_table(const char *member) {
  for (size_t i = 0; i < MSI_ARRAY_LEN(rows); i++)
    if (strcmp(rows[i].field, member) == 0) return true;
  return false;
}

static void header_fields_in_table(void **state) {
  (void)state;
  const char *h = read_whole("include/memspace.h");
  const char *s = strstr(h, "typedef struct ms_stats_s {");
  const char *e = strstr(h, "} ms_stats_t;");
  assert_non_null(s);
  assert_non_null(e);
  int counted = 0;
  for (const char *p = strstr(s, "uint64_t "); p && p < e; p = strstr(p + 1, "uint64_t ")) {
    char name[64];
    if (sscanf(p, "uint64_t %63[a-z0-9_]", name) != 1 || strcmp(name, "reserved") == 0) continue;
    counted++;
    if (!field_in_table(name)) fail_msg("ms_stats_t.%s has no row in src/internal/stats.def", name);
  }
  assert_true(counted >= 30);
}

static char out[1 << 17];
static void to_buf(const char *text, void *arg) {
  (void)arg;
  size_t n = strlen(out);
  snprintf(out + n, sizeof out - n, "%s", text);
}

/* "class 16" -> "class N", "buffer_3" -> "buffer_N" */
static void generic(char *name) {
  char *d = name + strlen(name);
  while (d > name && isdigit((unsigned char)d[-1])) d--;
  if (*d && d > name && (d[-1] == ' ' || d[-1] == '_')) strcpy(d, "N");
}

static bool row_exists(const char *section, const char *name) {
  for (size_t i = 0; i < MSI_ARRAY_LEN(rows); i++)
    if (strcmp(rows[i].section, section) == 0 && strcmp(rows[i].name, name) == 0) return true;
  return false;
}

static bool printed(const char *section, const char *name) {
  char head[64];
  snprintf(head, sizeof head, "[%s]\n", section);
  const char *s = strstr(out, head);
  if (!s) return false;
  const char *e = strstr(s + 1, "\n[");
  char line[96];
  snprintf(line, sizeof line, "\n  %-28s ", name);
  const char *hit = strstr(s, line);
  return hit && (!e || hit < e);
}

static const char *sections_of(void) {
  static char list[256];
  list[0] = 0;
  for (const char *p = out; (p = strstr(p, "\n[")); p++) {
    const char *q = strchr(p, ']');
    strncat(list, p + 1, (size_t)(q - p));
  }
  return list;
}

static void printed_lines_are_rows(void **state) {
  (void)state;
  void *p = ms_malloc(100);
  out[0] = 0;
  ms_stats_print(to_buf, NULL, 0);
  /* parts never used print no section; the process, the heap and the page layer always */
  assert_string_equal(sections_of(), "[process][heap][pages]");
  /* use every part: each section appears */
  ms_space_config_t sc = {.initial_size = 1 << 20, .numa_node = -1};
  ms_space_t *sp = ms_space_create(&sc);
  assert_non_null(sp);
  ms_space_destroy(sp); /* a space made once keeps its section */
  ms_frame_config_t fc = {.range_size = 1 << 16};
  ms_frame_t *fr = ms_frame_create(&fc);
  assert_non_null(fr);
  assert_int_equal(ms_option_set(MS_OPTION_SPILL_THRESHOLD, 1LL << 40), 0);
  ms_dma_buffer_t *b = ms_dma_alloc(1 << 16, NULL);
  out[0] = 0;
  ms_stats_print(to_buf, NULL, 0);
  const char *secs = sections_of();
  assert_non_null(strstr(secs, "[spaces]"));
  assert_non_null(strstr(secs, "[frames]"));
  assert_non_null(strstr(secs, "[spill]"));
  if (b) assert_non_null(strstr(secs, "[dma]"));
  else print_message("dma section not checked: ms_dma_alloc refused (errno %d)\n", errno);
  /* every printed line is a row of its section */
  char section[32] = "";
  for (char *l = strtok(out, "\n"); l; l = strtok(NULL, "\n")) {
    if (l[0] == '[') { sscanf(l, "[%31[^]]", section); continue; }
    if (strncmp(l, "  ", 2) != 0) continue;
    char name[32];
    memcpy(name, l + 2, 28);
    name[28] = 0;
    for (int i = 27; i >= 0 && name[i] == ' '; i--) name[i] = 0;
    generic(name);
    if (!row_exists(section, name)) fail_msg("[%s] %s is printed but has no row in stats.def", section, name);
  }
  /* every row with a field is printed, in its section */
  out[0] = 0;
  ms_stats_print(to_buf, NULL, 0);
  for (size_t i = 0; i < MSI_ARRAY_LEN(rows); i++)
    if (*rows[i].field && (b || strcmp(rows[i].section, "dma") != 0) && !printed(rows[i].section, rows[i].name))
      fail_msg("[%s] %s (%s) is not printed", rows[i].section, rows[i].name, rows[i].field);
  /* and [dma]'s counters without a field (one run of rows, msi_stats_run) */
  for (size_t i = 0; b && i < MSI_ARRAY_LEN(rows); i++)
    if (strcmp(rows[i].section, "dma") == 0 && !*rows[i].field &&
        (strcmp(rows[i].unit, "bytes") == 0 || strcmp(rows[i].unit, "count") == 0) && !printed("dma", rows[i].name))
      fail_msg("[dma] %s is not printed", rows[i].name);
  /* JSON: counters are numbers, a size class an object of numbers, the header's version, pid and program */
  out[0] = 0;
  ms_stats_print(to_buf, NULL, MS_STATS_JSON);
  char path[] = "/tmp/ms_stats_table_XXXXXX";
  assert_int_equal(ms_test_temp_file(path, out), 0);
  char cmd[2048];
  snprintf(cmd, sizeof cmd,
           "python3 -c 'import json,sys,os; d=json.load(open(sys.argv[1])); "
           "assert d[\"version\"]==\"%d.%d.%d\" and d[\"stats_version\"]==%d, d; "
           "assert d[\"pid\"]==int(sys.argv[2]) and d[\"program\"]==sys.argv[3], d; "
           "cls=[v for k,v in d[\"heap\"].items() if k.startswith(\"class \")]; assert cls; "
           "assert all(isinstance(c[k],int) for c in cls for k in (\"allocated\",\"cached\",\"mapped\",\"returned\")); "
           "assert all(isinstance(d[s][n],int) for s,n in [%s]), d' %s %d %s",
           MEMSPACE_VERSION_MAJOR, MEMSPACE_VERSION_MINOR, MEMSPACE_VERSION_PATCH, MS_STATS_VERSION, "%s", path,
           (int)getpid(), program_invocation_short_name);
  char pairs[4096] = "", *w = pairs;
  for (size_t i = 0; i < MSI_ARRAY_LEN(rows); i++)
    if (*rows[i].field && (b || strcmp(rows[i].section, "dma") != 0))
      w += snprintf(w, sizeof pairs - (size_t)(w - pairs), "(\"%s\",\"%s\"),", rows[i].section, rows[i].name);
  char full[8192];
  snprintf(full, sizeof full, cmd, pairs);
  int rc = system(full);
  unlink(path);
  assert_int_equal(rc, 0);
  if (b) ms_dma_free(b);
  ms_frame_destroy(fr);
  ms_option_set(MS_OPTION_SPILL_THRESHOLD, 0);
  ms_free(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(rows_documented), cmocka_unit_test(header_fields_in_table),
                                     cmocka_unit_test(printed_lines_are_rows)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
