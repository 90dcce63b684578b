/* SPDX-License-Identifier: MIT */
/* stats.c: the statistics namespace. Parts register a source (get + optional print); ms_stats_get sums them,
   ms_stats_print writes text or JSON through a callback without allocating. docs/stats.md explains each line. */
#include "internal.h"
#include "os.h"
#include "route.h"
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define MAX_SOURCES 16
MSI_START_DATA static const msi_stats_source_t *sources[MAX_SOURCES]; /* registered by constructors */
MSI_START_DATA static _Atomic int source_count;
MSI_START_DATA static msi_lock_t source_lock = MSI_LOCK_INIT;

MSI_STARTUP_TEXT void msi_stats_register(const msi_stats_source_t *s) {
  MSI_REGISTER_ONCE(sources, MAX_SOURCES, &source_count, &source_lock, s);
}

/* fork.c's hook (part 9 of the lock order: source_lock is a leaf) */
MSI_COLD void msi_fork_stats(msi_fork_phase_t phase, bool locking) {
  if (!locking) return;
  if (phase == MSI_FORK_PREPARE) msi_lock(&source_lock);
  else if (phase == MSI_FORK_PARENT) msi_unlock(&source_lock);
  else msi_lock_reset(&source_lock);
}

/* every source's counters into a whole ms_stats_t */
static void stats_fill(ms_stats_t *full) {
  memset(full, 0, sizeof *full);
  full->version = MS_STATS_VERSION;
  int n = atomic_load(&source_count);
  for (int i = 0; i < n; i++)
    if (sources[i]->get) sources[i]->get(full);
  full->size = sizeof *full;
}

/* a caller whose ms_stats_t is an older, shorter one: filled through a whole one on the stack (a frame of its own,
   so that the common case's frame stays small) */
static MSI_NOINLINE void stats_get_short(ms_stats_t *stats, size_t size) {
  ms_stats_t full;
  stats_fill(&full);
  full.size = size;
  if (size <= offsetof(ms_stats_t, heap_class_more)) full.version = 1; /* the layout that caller knows */
  msi_memcpy(stats, &full, size);
}

/* The sources fill the caller's own ms_stats_t when it is a whole one: a second copy on the stack (5.6 KiB) made
   mallinfo2, malloc_info and malloc_stats need more stack than a thread of PTHREAD_STACK_MIN has (about 12 KiB
   usable once glibc has put its descriptor and TLS there) */
int ms_stats_get(ms_stats_t *stats, size_t size) {
  if (!stats || size < offsetof(ms_stats_t, os_reserved_bytes)) { errno = EINVAL; return EINVAL; }
  if (size >= sizeof *stats) stats_fill(stats);
  else stats_get_short(stats, size);
  return 0;
}

struct msi_stats_writer_s {
  ms_output_fn *out;
  void *arg;
  bool json;
  int fields;          /* fields written in the current section */
  const char *section; /* the current section's name */
  const ms_stats_t *stats; /* the snapshot being printed (msi_stats_snapshot) */
};

const ms_stats_t *msi_stats_snapshot(const msi_stats_writer_t *w) { return w->stats; }

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
    else if (len) msi_memcpy(buf + n, p, len), n += len;
    else msi_memcpy(buf + n, "\xef\xbf\xbd", 3), n += 3, len = 1;
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

/* the table (stats.def): each line's section, name, ms_stats_t offset (NO_FIELD: printed by the section's source)
   and unit. The strings are held in the table, not pointed to: a table of pointers is one relocation per string
   that the dynamic loader applies in every process at start-up, on pages it then has to copy */
#define NO_FIELD UINT32_MAX
#define F(member) offsetof(ms_stats_t, member)
#define NOFIELD NO_FIELD
typedef struct { char section[8], name[28]; uint32_t offset; char unit[8]; } line_t;
static const line_t lines[] = {
#define X(section, name, field, unit, doc) {#section, name, field, #unit},
#include "stats.def"
#undef X
};
/* room for each string and its terminating zero */
#define ROOM(m) sizeof(((line_t *)0)->m)
#define X(sec, nm, field, un, doc)                                                                                 \
  _Static_assert(sizeof(#sec) <= ROOM(section) && sizeof(nm) <= ROOM(name) && sizeof(#un) <= ROOM(unit),          \
"stats.def: a string longer than its room in line_t");
#include "stats.def"
#undef X
#undef ROOM
#undef F
#undef NOFIELD

static bool run_row(size_t l, const char *section) {
  return l < MSI_ARRAY_LEN(lines) && strcmp(lines[l].section, section) == 0 && lines[l].offset == NO_FIELD &&
         (strcmp(lines[l].unit, "bytes") == 0 || strcmp(lines[l].unit, "count") == 0);
}

void msi_stats_run(msi_stats_writer_t *w, const char *first, const char *last, unsigned n,
                   const unsigned long long values[]) {
  size_t l = 0;
  while (l < MSI_ARRAY_LEN(lines) && (strcmp(lines[l].section, w->section) != 0 || strcmp(lines[l].name, first) != 0)) l++;
  for (unsigned i = 0; i < n; i++) /* the n rows from first on are numbers without a field, the last one `last` */
    if (!run_row(l + i, w->section) || (i + 1 == n && strcmp(lines[l + i].name, last) != 0)) {
      msi_error("stats: [%s] %s..%s is not a run of %u numbers in stats.def", w->section, first, last, n);
      return;
    }
  for (unsigned i = 0; i < n; i++, l++)
    msi_stats_field(w, lines[l].name, values[i], strcmp(lines[l].unit, "bytes") == 0 ? "bytes" : "");
}

void msi_stats_numbers(msi_stats_writer_t *w, const char *name, unsigned n, const char *const keys[],
                       const unsigned long long values[]) {
  char buf[512];
  size_t len = w->json ? msi_snprintf(buf, sizeof buf, "%s\n    \"%s\": {", w->fields ? "," : "", name)
                       : msi_snprintf(buf, sizeof buf, "  %-28s", name);
  for (unsigned i = 0; i < n && len < sizeof buf; i++)
    len += w->json ? msi_snprintf(buf + len, sizeof buf - len, "%s\"%s\": %llu", i ? ", " : "", keys[i], values[i])
                   : msi_snprintf(buf + len, sizeof buf - len, " %s %llu", keys[i], values[i]);
  if (len < sizeof buf) msi_snprintf(buf + len, sizeof buf - len, "%s", w->json ? "}" : "\n");
  w->out(buf, w->arg);
  w->fields++;
}

/* [process]: the core's own section */
static void process_get(ms_stats_t *s) {
  struct rusage ru;
  if (msi_os_getrusage(&ru) == 0) s->process_peak_rss_bytes = (uint64_t)ru.ru_maxrss * 1024; /* KiB */
}
static const msi_stats_source_t process_source = {"process", process_get, NULL, NULL};
MSI_STARTUP_TEXT __attribute__((constructor(101))) static void process_register(void) {
  msi_stats_register(&process_source);
  msi_stats_register(&msi_route_stats_source); /* [malloc] (route.c): printed when the calls were counted */
}

void ms_stats_print(ms_output_fn *out, void *arg, unsigned flags) {
  ms_stats_t s;
  ms_stats_get(&s, sizeof s);
  msi_stats_writer_t w = {out ? out : stderr_out, arg, (flags & MS_STATS_JSON) != 0, 0, "", &s};
  int n = atomic_load(&source_count);
  const char *program = program_invocation_short_name ? program_invocation_short_name : "";
  if (w.json) {
    wprintf_(&w, "{\n  \"version\": \"%d.%d.%d\",\n  \"stats_version\": %d,\n  \"pid\": %d,\n  \"program\": \"",
             MEMSPACE_VERSION_MAJOR, MEMSPACE_VERSION_MINOR, MEMSPACE_VERSION_PATCH, MS_STATS_VERSION, msi_os_getpid());
    json_string(&w, program);
    w.out("\"", w.arg);
  } else {
    wprintf_(&w, "memspace %d.%d.%d statistics of pid %d (", MEMSPACE_VERSION_MAJOR, MEMSPACE_VERSION_MINOR,
             MEMSPACE_VERSION_PATCH, msi_os_getpid());
    w.out(program, w.arg);
    w.out(")\n", w.arg);
  }
  for (int i = 0; i < n; i++) {
    const msi_stats_source_t *src = sources[i];
    if (src->used && !src->used()) continue;
    w.fields = 0;
    w.section = src->name;
    if (w.json) wprintf_(&w, ",\n  \"%s\": {", src->name);
    else wprintf_(&w, "[%s]\n", src->name);
    for (size_t l = 0; l < MSI_ARRAY_LEN(lines); l++)
      if (lines[l].offset != NO_FIELD && strcmp(lines[l].section, src->name) == 0) {
        uint64_t v;
        msi_memcpy(&v, (const char *)&s + lines[l].offset, sizeof v);
        msi_stats_field(&w, lines[l].name, v, strcmp(lines[l].unit, "bytes") == 0 ? "bytes" : "");
      }
    if (src->print) src->print(&w);
    if (w.json) w.out("\n  }", w.arg);
  }
  if (w.json) w.out("\n}\n", w.arg);
}

/* ---- at exit ---- */
MSI_COLD_BSS static char exit_buf[64 * 1024]; /* touched only by the process that prints */
static size_t exit_len;
static int exit_fd, exit_err; /* exit_err: the first write error */
static bool exit_locked;

static void exit_flush(void) {
  if (!exit_len) return;
  /* one write of the block: atomic for a pipe up to PIPE_BUF and for a regular file; beyond PIPE_BUF (or past
     one buffer) a record lock on the descriptor keeps processes sharing it from interleaving (per process, so
     it holds between processes that inherited the same open file; refused on a terminal: written unlocked) */
  if (!exit_locked && exit_len > 4096) {
    msi_os_lock_file(exit_fd, true);
    exit_locked = true;
  }
  int err = msi_write_fd(exit_fd, exit_buf, exit_len);
  if (err && !exit_err) exit_err = err;
  exit_len = 0;
}

static void exit_out(const char *text, void *arg) {
  (void)arg;
  for (size_t n = strlen(text); n;) {
    if (exit_len == sizeof exit_buf) exit_flush();
    size_t k = n < sizeof exit_buf - exit_len ? n : sizeof exit_buf - exit_len;
    msi_memcpy(exit_buf + exit_len, text, k);
    exit_len += k, text += k, n -= k;
  }
}

/* MEMSPACE_STATS_FILE's name for this process: %p is the pid (every %p), else ".PID" appended; false when too long */
static bool stats_file_name(const char *pattern, char *name, size_t cap) {
  size_t n = 0;
  bool pid_seen = false;
  char pid[24];
  msi_snprintf(pid, sizeof pid, "%d", msi_os_getpid());
  for (const char *p = pattern; *p; p++) {
    const char *piece = p;
    size_t len = 1;
    if (p[0] == '%' && p[1] == 'p') piece = pid, len = strlen(pid), p++, pid_seen = true;
    if (n + len >= cap) return false;
    msi_memcpy(name + n, piece, len), n += len;
  }
  if (!pid_seen && n + 1 + strlen(pid) >= cap) return false;
  if (!pid_seen) name[n++] = '.', msi_memcpy(name + n, pid, strlen(pid)), n += strlen(pid);
  name[n] = 0;
  return true;
}

/* O_NONBLOCK: a FIFO without a reader is refused (ENXIO), not waited for at exit; the writes then block */
static int stats_file_open(const char *name) {
  int fd = msi_os_open(name, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC | O_NONBLOCK, 0644);
  if (fd < 0 || msi_os_set_blocking(fd) == 0) return fd;
  int e = errno;
  msi_os_close(fd);
  errno = e;
  return -1;
}

/* fd: stderr, or the copy of it taken at start-up once the program has closed it (init.c): the statistics and the
   messages about MEMSPACE_STATS_FILE go there */
void msi_stats_exit_print(int fd) {
  static msi_lock_t lock = MSI_LOCK_INIT;
  msi_lock(&lock);
  const char *pattern = ms_option_get_string(MS_OPTION_STATS_FILE);
  int file = -1;
  char name[4096]; /* (on the stack: a static one would move the hot variables of .bss) */
  if (pattern) {
    if (!stats_file_name(pattern, name, sizeof name)) msi_error_to(fd, "MEMSPACE_STATS_FILE: the name is too long");
    else if ((file = stats_file_open(name)) < 0)
      msi_error_to(fd, "MEMSPACE_STATS_FILE: cannot open %s (%s): statistics on stderr", name, MSI_ERRNO(errno));
  }
  exit_fd = file >= 0 ? file : fd;
  exit_len = 0;
  exit_err = 0;
  exit_locked = false;
  ms_stats_print(exit_out, NULL, msi_opt(MS_OPTION_STATS_FORMAT) == 1 ? MS_STATS_JSON : 0);
  exit_flush();
  if (exit_locked) msi_os_lock_file(exit_fd, false);
  if (file >= 0 && exit_err) /* (a full disk, a file-size limit): said on stderr, not lost without a word */
    msi_error_to(fd, "MEMSPACE_STATS_FILE: writing %s failed (%s): the statistics there are incomplete", name,
                 MSI_ERRNO(exit_err));
  if (file >= 0) msi_os_close(file);
  msi_unlock(&lock);
}
