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
  if (!stats || size < offsetof(ms_stats_t, os_reserved_bytes)) { errno = EINVAL; return EINVAL; }
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

/* bytes of the valid UTF-8 sequence starting at p (lead byte >= 0x80), 0 when it is not one */
static size_t utf8_len(const unsigned char *p) {
  unsigned char c = p[0], lo = 0x80, hi = 0xbf;
  size_t n;
  if (c >= 0xc2 && c <= 0xdf) n = 2;
  else if (c >= 0xe0 && c <= 0xef) n = 3, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
  else if (c >= 0xf0 && c <= 0xf4) n = 4, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
  else return 0;
  if (p[1] < lo || p[1] > hi) return 0; /* also stops at the terminating NUL */
  for (size_t i = 2; i < n; i++)
    if (p[i] < 0x80 || p[i] > 0xbf) return 0;
  return n;
}

/* a JSON string's contents, whole whatever its length (written in pieces): quotes, backslashes and control
   characters escaped, bytes that are not valid UTF-8 (a path may hold any byte) replaced by U+FFFD, since JSON
   text is UTF-8 */
static void json_string(msi_stats_writer_t *w, const char *value) {
  char buf[256];
  size_t n = 0;
  for (const unsigned char *p = (const unsigned char *)value; *p;) {
    if (n + 8 > sizeof buf) { /* room for the longest piece (an escape of 6) and the NUL */
      buf[n] = 0;
      w->out(buf, w->arg);
      n = 0;
    }
    unsigned char c = *p;
    size_t len = c < 0x80 ? 1 : utf8_len(p);
    if (c == '"' || c == '\\') buf[n++] = '\\', buf[n++] = (char)c;
    else if (c < 0x20) n += msi_snprintf(buf + n, sizeof buf - n, "\\u%04x", c);
    else if (len) memcpy(buf + n, p, len), n += len;
    else memcpy(buf + n, "\xef\xbf\xbd", 3), n += 3, len = 1;
    p += len ? len : 1;
  }
  buf[n] = 0;
  if (n) w->out(buf, w->arg);
}

void msi_stats_text(msi_stats_writer_t *w, const char *name, const char *value) {
  if (!value) value = "";
  if (w->json) {
    wprintf_(w, "%s\n    \"%s\": \"", w->fields ? "," : "", name);
    json_string(w, value);
    w->out("\"", w->arg);
  } else {
    wprintf_(w, "  %-28s ", name);
    w->out(value, w->arg); /* whole, however long */
    w->out("\n", w->arg);
  }
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
