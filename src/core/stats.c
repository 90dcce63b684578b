/* SPDX-License-Identifier: MIT */
/* stats.c: the statistics namespace. Parts register a source (get + optional print); ms_stats_get sums them,
   ms_stats_print writes text or JSON through a callback without allocating. docs/stats.md explains each line. */
#include "internal.h"
#include <errno.h>
#include <string.h>

#define MAX_SOURCES 16
static const msi_stats_source_t *sources[MAX_SOURCES];
static _Atomic int source_count;
static msi_lock_t source_lock = MSI_LOCK_INIT;

void msi_stats_register(const msi_stats_source_t *s) {
  msi_lock(&source_lock);
  int n = atomic_load(&source_count);
  bool present = false;
  for (int i = 0; i < n; i++) present |= sources[i] == s;
  if (!present && n < MAX_SOURCES) {
    sources[n] = s;
    atomic_store(&source_count, n + 1);
  }
  msi_unlock(&source_lock);
}

int ms_stats_get(ms_stats_t *stats, size_t size) {
  if (!stats || size < offsetof(ms_stats_t, os_reserved_bytes)) return EINVAL;
  ms_stats_t full;
  memset(&full, 0, sizeof full);
  full.version = MS_STATS_VERSION;
  int n = atomic_load(&source_count);
  for (int i = 0; i < n; i++)
    if (sources[i]->get) sources[i]->get(&full);
  size_t copy = size < sizeof full ? size : sizeof full;
  full.size = copy;
  if (copy <= offsetof(ms_stats_t, heap_class_more)) full.version = 1; /* the layout that caller knows */
  memcpy(stats, &full, copy);
  return 0;
}

struct msi_stats_writer_s {
  ms_output_fn *out;
  void *arg;
  bool json;
  int fields; /* fields written in the current section */
};

static void stderr_out(const char *text, void *arg) {
  (void)arg;
  msi_write_fd(2, text, strlen(text));
}

static void wprintf_(msi_stats_writer_t *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void wprintf_(msi_stats_writer_t *w, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  msi_vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  w->out(buf, w->arg);
}

void msi_stats_field(msi_stats_writer_t *w, const char *name, unsigned long long value, const char *unit) {
  if (w->json)
    wprintf_(w, "%s\n    \"%s\": %llu", w->fields ? "," : "", name, value);
  else if (unit && strcmp(unit, "bytes") == 0 && value >= 10 * MSI_MiB)
    wprintf_(w, "  %-28s %llu (%llu MiB)\n", name, value, value >> 20);
  else
    wprintf_(w, "  %-28s %llu%s%s\n", name, value, unit && *unit ? " " : "", unit ? unit : "");
  w->fields++;
}

void msi_stats_text(msi_stats_writer_t *w, const char *name, const char *value) {
  if (w->json) {
    /* JSON string: escape quotes, backslashes and control characters */
    char esc[256];
    size_t n = 0;
    for (const char *v = value ? value : ""; *v && n + 7 < sizeof esc; v++) {
      unsigned char c = (unsigned char)*v;
      if (c == '"' || c == '\\') { esc[n++] = '\\'; esc[n++] = (char)c; }
      else if (c < 0x20) n += msi_snprintf(esc + n, sizeof esc - n, "\\u%04x", c);
      else esc[n++] = (char)c;
    }
    esc[n] = 0;
    wprintf_(w, "%s\n    \"%s\": \"%s\"", w->fields ? "," : "", name, esc);
  } else
    wprintf_(w, "  %-28s %s\n", name, value);
  w->fields++;
}

void ms_stats_print(ms_output_fn *out, void *arg, unsigned flags) {
  msi_stats_writer_t w = {out ? out : stderr_out, arg, (flags & MS_STATS_JSON) != 0, 0};
  int n = atomic_load(&source_count);
  if (w.json) w.out("{", w.arg);
  else wprintf_(&w, "memspace %d.%d.%d statistics\n", MEMSPACE_VERSION_MAJOR, MEMSPACE_VERSION_MINOR,
                MEMSPACE_VERSION_PATCH);
  int sections = 0;
  for (int i = 0; i < n; i++) {
    if (!sources[i]->print) continue;
    w.fields = 0;
    if (w.json) wprintf_(&w, "%s\n  \"%s\": {", sections++ ? "," : "", sources[i]->name);
    else wprintf_(&w, "[%s]\n", sources[i]->name);
    sources[i]->print(&w);
    if (w.json) w.out("\n  }", w.arg);
  }
  if (w.json) w.out("\n}\n", w.arg);
}
