/* SPDX-License-Identifier: MIT */
/* options.c: the option table (options.def) mapped to MEMSPACE_* environment variables, read from environ
   without allocating. An invalid value is reported once, naming the variable, and the default is kept. */
#include "internal.h"
#include "os.h"
#include "route.h"
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/auxv.h>

extern char **environ;

typedef enum { KIND_BOOL, KIND_INT, KIND_SIZE, KIND_ENUM, KIND_STR } opt_kind_t;
/* the options' variable names and descriptions, each option's two strings side by side in one constant: the
   table below holds their offsets, not pointers (a pointer is a relocation the dynamic loader applies in every
   process at start-up, on a page it then has to copy) */
static const struct opt_text_s {
#define X(id, env, kind, def, min, max, doc) char id##_env[sizeof("MEMSPACE_" env)], id##_doc[sizeof(doc)];
#include "options.def"
#undef X
} opt_text = {
#define X(id, env, kind, def, min, max, doc) "MEMSPACE_" env, doc,
#include "options.def"
#undef X
};
_Static_assert(sizeof(struct opt_text_s) <= UINT16_MAX, "the option table's offsets into opt_text fit 16 bits");
typedef struct {
  uint16_t env, doc; /* offsets in opt_text */
  unsigned char len; /* strlen(env) */
  opt_kind_t kind;
  long long def, min, max;
} opt_desc_t;

static const opt_desc_t opt_table[MS_OPTION_COUNT] = {
#define X(id, env, kind, def, min, max, doc) [MS_OPTION_##id] = {offsetof(struct opt_text_s, id##_env), \
    offsetof(struct opt_text_s, id##_doc), sizeof("MEMSPACE_" env) - 1, KIND_##kind, def, min, max},
#include "options.def"
#undef X
};
#define opt_env(d) ((const char *)&opt_text + (d)->env) /* the option's variable, MEMSPACE_... */
#define opt_doc(d) ((const char *)&opt_text + (d)->doc)

_Atomic long long msi_option_values[MS_OPTION_COUNT] = {
#define X(id, env, kind, def, min, max, doc) [MS_OPTION_##id] = def,
#include "options.def"
#undef X
};
static const char *opt_strings[MS_OPTION_COUNT];
/* A string value without the spaces around it (docs/contract.md §3: spaces around any value are ignored), always
   a copy in the library's own storage (one slot per string option, no allocation): a program may reuse the
   environment's memory once it has started (setproctitle as nginx, postgres and redis do it moves environ to
   copies and writes the process title over the original strings), and a pointer into it would then read the
   title as the path. NULL (invalid) for nothing but spaces or a value that does not fit. */
#define STR_SLOTS 2
#define STR_COPY_MAX 4096
MSI_COLD_BSS static char str_copy[STR_SLOTS][STR_COPY_MAX];
static signed char str_slot[MS_OPTION_COUNT];
static char *str_buffer(int option) { /* the option's copy slot; NULL: none left */
  int slot = str_slot[option];
  if (!slot) {
    static int used;
    if (used == STR_SLOTS) return NULL;
    slot = str_slot[option] = (signed char)++used;
  }
  return str_copy[slot - 1];
}
/* Both string options are paths (a directory, a file), used long after start: a relative one is made absolute
   against the directory the process starts in, as it was meant when the variable was set, not the one the
   program has moved to by its first spill or its exit. Kept relative when the current directory cannot be read
   or the whole does not fit. */
static const char *str_trim(int option, const char *s) {
  while (*s == ' ') s++;
  size_t len = strlen(s);
  if (len == 0) return NULL;
  while (s[len - 1] == ' ') len--;
  char *b = str_buffer(option);
  if (!b || len >= STR_COPY_MAX) return NULL;
  long cwd = s[0] == '/' ? -1 : msi_os_getcwd(b, STR_COPY_MAX);
  size_t at = cwd < 0 ? 0 : (size_t)cwd + (cwd > 1); /* (after "/" no second slash) */
  if (at + len >= STR_COPY_MAX) at = 0, cwd = -1; /* too long with the directory: relative, as given */
  if (cwd > 1) b[cwd] = '/';
  msi_memcpy(b + at, s, len);
  b[at + len] = 0;
  return b;
}
MSI_START_DATA static _Atomic unsigned opt_invalid; /* bit per option set to an invalid value */
MSI_START_DATA static _Atomic unsigned opt_given;   /* bit per option given a valid value (environment or ms_option_set) */
_Static_assert(MS_OPTION_COUNT <= 32, "opt_invalid has one bit per option");
MSI_START_DATA static _Atomic int opt_state; /* 0 not read, 1 reading, 2 read */
/* environ is NULL until the C library's initialiser runs: an allocation from a program's preinit_array function
   comes before it (the options were then read as all defaults, for good). Until the library constructor says
   the environment is final, a NULL environ leaves the options unread (their defaults apply meanwhile). */
MSI_START_DATA static _Atomic bool environ_final; /* written by every process at start-up */
MSI_STARTUP_TEXT void msi_options_environ_final(void) { atomic_store_explicit(&environ_final, true, memory_order_relaxed); }
MSI_STARTUP_TEXT bool msi_options_read(void) { return atomic_load_explicit(&opt_state, memory_order_acquire) == 2; }

const char *msi_getenv(const char *name) {
  if (!environ || !name) return NULL;
  size_t n = strlen(name);
  for (char **e = environ; *e; e++)
    if (strncmp(*e, name, n) == 0 && (*e)[n] == '=') return *e + n + 1;
  return NULL;
}

void msi_unsetenv(const char *name) {
  if (!environ || !name) return;
  size_t n = strlen(name);
  char **w = environ;
  for (char **e = environ; *e; e++)
    if (!(strncmp(*e, name, n) == 0 && (*e)[n] == '=')) *w++ = *e;
  *w = NULL;
}

static int lower(int c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

/* ms_parse_size without touching errno: reading the environment must not change the program's errno */
static int parse_size(const char *s, size_t *value) {
  if (!s || !value) return EINVAL;
  while (*s == ' ') s++;
  if (*s < '0' || *s > '9') return EINVAL;
  unsigned long long v = 0;
  for (; *s >= '0' && *s <= '9'; s++) {
    unsigned d = (unsigned)(*s - '0');
    if (v > (ULLONG_MAX - d) / 10) return ERANGE;
    v = v * 10 + d;
  }
  unsigned shift = 0;
  switch (lower(*s)) {
  case 'k': shift = 10; s++; break;
  case 'm': shift = 20; s++; break;
  case 'g': shift = 30; s++; break;
  case 't': shift = 40; s++; break;
  default: break;
  }
  if (shift && lower(*s) == 'i') { s++; if (lower(*s) != 'b') return EINVAL; }
  if (lower(*s) == 'b') s++;
  while (*s == ' ') s++;
  if (*s) return EINVAL;
  if (shift && v > (SIZE_MAX >> shift)) return ERANGE;
  if (v > SIZE_MAX) return ERANGE;
  *value = (size_t)(v << shift);
  return 0;
}

int ms_parse_size(const char *s, size_t *value) {
  int r = parse_size(s, value);
  if (r) errno = r;
  return r;
}

static int parse_int(const char *s, long long *out) {
  int neg = 0;
  if (*s == '-') { neg = 1; s++; }
  if (*s < '0' || *s > '9') return EINVAL;
  long long v = 0;
  for (; *s >= '0' && *s <= '9'; s++) {
    if (v > (LLONG_MAX - 9) / 10) return ERANGE;
    v = v * 10 + (*s - '0');
  }
  if (*s) return EINVAL;
  *out = neg ? -v : v;
  return 0;
}

static bool word_eq(const char *a, const char *b, size_t blen) {
  size_t i = 0;
  for (; i < blen && a[i]; i++)
    if (lower(a[i]) != lower(b[i])) return false;
  return i == blen && a[i] == 0;
}

/* enum names follow the ':' in doc, comma separated; a number is accepted too */
static int parse_enum(const opt_desc_t *d, const char *s, long long *out) {
  const char *p = strchr(opt_doc(d), ':');
  long long idx = 0;
  while (p && *p) {
    p++;
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (word_eq(s, p, len)) { *out = idx; return 0; }
    idx++;
    p = end;
  }
  if (parse_int(s, out) == 0 && *out >= d->min && *out <= d->max) return 0;
  return EINVAL;
}

/* the first len bytes of s as a string, cut to fit cap */
static const char *copy_word(char *buf, size_t cap, const char *s, size_t len) {
  if (len >= cap) len = cap - 1;
  msi_memcpy(buf, s, len);
  buf[len] = 0;
  return buf;
}

/* docs/contract.md §3: MEMSPACE_HUGE_PAGES is 0, 2M or 1G (any spelling of those sizes); anything else is invalid */
static bool size_allowed(const opt_desc_t *d, unsigned long long v) {
  return d != &opt_table[MS_OPTION_HUGE_PAGES] || v == 0 || v == (2ull << 20) || v == (1ull << 30);
}

static int parse_value(const opt_desc_t *d, const char *s, long long *out) {
  /* spaces around any value are ignored, as around a size (docs/options.md): " 5" is 5 for every kind */
  char buf[64];
  while (*s == ' ') s++;
  size_t len = strlen(s);
  while (len && s[len - 1] == ' ') len--;
  if (d->kind != KIND_STR && len == 0) return EINVAL;
  if (d->kind != KIND_STR && len < sizeof buf) s = copy_word(buf, sizeof buf, s, len); /* longer: no valid word */
  switch (d->kind) {
  case KIND_BOOL:
    if (word_eq(s, "1", 1) || word_eq(s, "true", 4) || word_eq(s, "yes", 3) || word_eq(s, "on", 2)) { *out = 1; return 0; }
    if (word_eq(s, "0", 1) || word_eq(s, "false", 5) || word_eq(s, "no", 2) || word_eq(s, "off", 3)) { *out = 0; return 0; }
    return EINVAL;
  case KIND_INT: {
    int r = parse_int(s, out);
    if (r == 0 && (*out < d->min || *out > d->max)) r = ERANGE;
    return r;
  }
  case KIND_SIZE: {
    if (d->min < 0 && word_eq(s, "auto", 4)) { *out = -1; return 0; } /* a size option that takes auto (-1) */
    size_t v;
    int r = parse_size(s, &v);
    if (r == 0 && v > (size_t)LLONG_MAX) r = ERANGE;
    if (r == 0 && !size_allowed(d, v)) r = EINVAL;
    if (r == 0) *out = (long long)v;
    return r;
  }
  case KIND_ENUM: return parse_enum(d, s, out);
  case KIND_STR: return 0;
  }
  return EINVAL;
}

/* the default's text: an enum's name, else the number */
static const char *default_text(const opt_desc_t *d, char *buf, size_t cap) {
  if (d->kind == KIND_STR) return copy_word(buf, cap, "(unset)", 7);
  const char *p = d->kind == KIND_ENUM ? strchr(opt_doc(d), ':') : NULL;
  for (long long idx = 0; p && *p; idx++) {
    p++;
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (idx == d->def) return copy_word(buf, cap, p, len);
    p = end;
  }
  if (d->kind == KIND_SIZE && d->def < 0) return copy_word(buf, cap, "auto", 4);
  msi_snprintf(buf, cap, "%lld", d->def);
  return buf;
}

/* An invalid value is reported, then removed from the environment: the default applies here and in the child
   processes, which would otherwise repeat the warning (a shell script's 35 processes, 35 lines). */
static void report_invalid(const opt_desc_t *d, const char *s) {
  char def[64], doc[192];
  /* an enum's table text "what:a,b,c" is shown as "what: a, b, c" */
  size_t n = 0;
  for (const char *p = opt_doc(d); *p && n + 3 < sizeof doc; p++) {
    doc[n++] = *p;
    if (d->kind == KIND_ENUM && (*p == ':' || *p == ',')) doc[n++] = ' ';
  }
  doc[n] = 0;
  /* what the kind takes, as `memspace run` says it (an enum's doc lists its words; MEMSPACE_HUGE_PAGES's its sizes) */
  char takes[80] = "";
  if (d->kind == KIND_SIZE && d != &opt_table[MS_OPTION_HUGE_PAGES])
    msi_snprintf(takes, sizeof takes, "; takes bytes or a number with K, M, G or T%s", d->min < 0 ? ", or auto" : "");
  else if (d->kind == KIND_BOOL) msi_snprintf(takes, sizeof takes, "; takes 1/0, true/false, yes/no, on/off");
  else if (d->kind == KIND_INT) msi_snprintf(takes, sizeof takes, "; takes %lld to %lld", d->min, d->max);
  if (d == &opt_table[MS_OPTION_HUGE_PAGES]) /* (0 given is the operator's "no huge pages": not what unset does) */
    msi_warning("invalid value '%s' for %s (%s%s); treated as unset: 2 MiB pages for MS_SPACE_HUGE_PAGES spaces, "
                "the best size for DMA", s, opt_env(d), doc, takes);
  else
    msi_warning("invalid value '%s' for %s (%s%s); using the default %s", s, opt_env(d), doc, takes,
                default_text(d, def, sizeof def));
  msi_unsetenv(opt_env(d));
}

/* edit distance of two short names, capped at 9 (for "did you mean") */
static unsigned name_distance(const char *a, size_t la, const char *b, size_t lb) {
  unsigned row[64];
  if (la >= MSI_ARRAY_LEN(row) || lb >= MSI_ARRAY_LEN(row)) return 9;
  for (size_t j = 0; j <= lb; j++) row[j] = (unsigned)j;
  for (size_t i = 1; i <= la; i++) {
    unsigned diag = row[0];
    row[0] = (unsigned)i;
    for (size_t j = 1; j <= lb; j++) {
      unsigned up = row[j], best = diag + (lower(a[i - 1]) != lower(b[j - 1]));
      if (up + 1 < best) best = up + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      diag = up;
      row[j] = best;
    }
  }
  return row[lb] < 9 ? row[lb] : 9;
}

/* MEMSPACE_* variables that are not options: the build and test scripts' own, and memspace run's marker */
static bool script_variable(const char *name, size_t len) {
  static const char *const names[] = {"MEMSPACE_BUILD", "MEMSPACE_CHECK_ALL", "MEMSPACE_RUN_PID", "MEMSPACE_RUN_SPILL_CHECKED"};
  for (size_t i = 0; i < MSI_ARRAY_LEN(names); i++)
    if (strlen(names[i]) == len && strncmp(names[i], name, len) == 0) return true;
  return false;
}

/* A MEMSPACE_* variable that names no option (a misspelling such as MEMSPACE_SHOWSTATS or MEMSPACE_show_stats:
   names are case-sensitive) is reported with the
   closest option's name, then removed from the environment so child processes do not repeat the warning. */
int msi_option_suggest(const char *name, size_t len) {
  if (len < 9 || strncmp(name, "MEMSPACE_", 9) != 0 || script_variable(name, len)) return -2;
  int best = -1;
  unsigned best_d = 9;
  for (int i = 0; i < MS_OPTION_COUNT; i++) {
    const char *n = opt_env(&opt_table[i]);
    unsigned dist = name_distance(name, len, n, strlen(n));
    if (dist < best_d) best_d = dist, best = i;
  }
  if (best_d == 0) { /* (the distance ignores case: MEMSPACE_show_stats is no option, and is told so) */
    const char *n = opt_env(&opt_table[best]);
    return strlen(n) == len && strncmp(name, n, len) == 0 ? -2 : best;
  }
  return best_d <= 3 ? best : -1;
}

static void report_unknown(void) {
  for (char **e = environ; e && *e;) {
    const char *eq = strchr(*e, '=');
    size_t len = eq ? (size_t)(eq - *e) : strlen(*e);
    int best = eq ? msi_option_suggest(*e, len) : -2;
    if (best == -2) { e++; continue; }
    char name[128];
    copy_word(name, sizeof name, *e, len);
    if (best >= 0)
      msi_warning("unknown variable %s ignored; did you mean %s? (docs/options.md)", name, opt_env(&opt_table[best]));
    else
      msi_warning("unknown variable %s ignored (docs/options.md lists the MEMSPACE_* options)", name);
    char *entry = *e;
    msi_unsetenv(name);
    if (*e == entry) e++; /* not removed (a name too long to copy, no '='): go on past it */
  }
}

/* s starts with the n bytes of prefix (no libc call: this runs in every process, before its first lazy binding) */
static bool has_prefix(const char *s, const char *prefix, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (s[i] != prefix[i]) return false;
  return true;
}

/* Every process reads its options at start-up, and most have no MEMSPACE_* variable: one pass over environ finds
   each option's value (the first entry of its name, as msi_getenv) and tells whether a MEMSPACE_* variable names no
   option (then report_unknown looks closer), where a search of environ per option would make reading the options
   the largest part of the library's start-up. */
static bool environ_options(const char *vals[MS_OPTION_COUNT]) {
  bool stray = false;
  for (char **e = environ; e && *e; e++) {
    const char *s = *e;
    if (s[0] != 'M' || !has_prefix(s, "MEMSPACE_", 9)) continue;
    int i = 0;
    for (; i < MS_OPTION_COUNT; i++) {
      const opt_desc_t *d = &opt_table[i];
      if (has_prefix(s + 9, opt_env(d) + 9, d->len - 9u) && s[d->len] == '=') break;
    }
    if (i == MS_OPTION_COUNT) stray = true;
    else if (!vals[i]) vals[i] = s + opt_table[i].len + 1;
  }
  return stray;
}

MSI_STARTUP_TEXT void msi_options_init(void) {
  int expected = 0;
  if (atomic_load_explicit(&opt_state, memory_order_acquire) == 2) return;
  if (!atomic_compare_exchange_strong(&opt_state, &expected, 1)) {
    while (atomic_load_explicit(&opt_state, memory_order_acquire) == 1) { /* another thread is reading */ }
    return;
  }
  if (!environ && !atomic_load_explicit(&environ_final, memory_order_relaxed)) {
    atomic_store_explicit(&opt_state, 0, memory_order_release); /* read again once environ is set (above) */
    return;
  }
  /* Secure-execution mode (setuid, setgid, file capabilities: AT_SECURE): the environment is the unprivileged
     caller's, who must not choose the files the program writes (MEMSPACE_STATS_FILE, MEMSPACE_SPILL_DIR), make
     its allocations fail (a small fixed MEMSPACE_SPACE_INITIAL) or read its addresses (MEMSPACE_VERBOSE). As
     glibc ignores its own malloc settings there, no MEMSPACE_* variable is read: every option keeps its default
     (ms_option_set still works). Reaches a program linked with libmemspace.a, or preloaded from ld.so.preload.
     One line says so when any is set (a real-time program given capabilities with setcap, run with them), with
     nothing of the process in it. */
  bool secure_exec = getauxval(AT_SECURE) != 0;
  const char *vals[MS_OPTION_COUNT] = {0};
  bool stray = environ_options(vals);
  if (msi_malloc_elsewhere && msi_malloc_elsewhere()) { /* an inert copy (route.h): MEMSPACE_VERBOSE alone, for the line saying so */
    long long v;
    const char *s = vals[MS_OPTION_VERBOSE];
    if (s && !secure_exec && parse_value(&opt_table[MS_OPTION_VERBOSE], s, &v) == 0)
      atomic_store_explicit(&msi_option_values[MS_OPTION_VERBOSE], v, memory_order_relaxed);
    atomic_store_explicit(&opt_state, 2, memory_order_release);
    return;
  }
  for (int i = 0; i < MS_OPTION_COUNT && secure_exec && !MSI_TOOL_PROCESS; i++)
    if (vals[i]) {
      msi_warning("MEMSPACE_* variables ignored: secure-execution mode (setuid, setgid or file capabilities); "
                  "the program can set its options with ms_option_set");
      break;
    }
  for (int i = 0; i < MS_OPTION_COUNT && !secure_exec; i++) {
    const opt_desc_t *d = &opt_table[i];
    const char *s = vals[i];
    if (!s) continue;
    if (d->kind == KIND_STR) { /* (empty: unset) */
      const char *t = *s ? str_trim(i, s) : NULL;
      if (*s && !t && !MSI_TOOL_PROCESS) report_invalid(d, s);
      if (*s && !t) atomic_fetch_or_explicit(&opt_invalid, 1u << i, memory_order_relaxed);
      opt_strings[i] = t;
      continue;
    }
    long long v;
    bool tool = MSI_TOOL_PROCESS;
    if (*s == 0 || parse_value(d, s, &v) != 0) {
      atomic_fetch_or_explicit(&opt_invalid, 1u << i, memory_order_relaxed);
      if (!tool) report_invalid(d, s);
      continue;
    }
    if (tool && (i == MS_OPTION_SPACE_INITIAL || i == MS_OPTION_SPACE_EXPAND || i == MS_OPTION_SPACE_AT ||
                 i == MS_OPTION_SPACE_INHERIT || i == MS_OPTION_SPILL_THRESHOLD || i == MS_OPTION_SHOW_STATS))
      continue; /* meant for the program the tool runs, not for the tool (internal.h) */
    atomic_store_explicit(&msi_option_values[i], v, memory_order_relaxed);
    atomic_fetch_or_explicit(&opt_given, 1u << i, memory_order_relaxed);
  }
  if (stray && !MSI_TOOL_PROCESS && !secure_exec) report_unknown();
  atomic_store_explicit(&opt_state, 2, memory_order_release);
}

int msi_option_parse(ms_option_t o, const char *text, long long *value) {
  if ((unsigned)o >= MS_OPTION_COUNT || opt_table[o].kind == KIND_STR || !text || !*text) return EINVAL;
  return parse_value(&opt_table[o], text, value);
}

long long ms_option_get(ms_option_t o) {
  if ((unsigned)o >= MS_OPTION_COUNT) { errno = EINVAL; return 0; }
  msi_options_init();
  return msi_opt(o);
}

const char *ms_option_get_string(ms_option_t o) {
  if ((unsigned)o >= MS_OPTION_COUNT || opt_table[o].kind != KIND_STR) { errno = EINVAL; return NULL; }
  msi_options_init();
  return opt_strings[o];
}

int ms_option_set(ms_option_t o, long long value) {
  if ((unsigned)o >= MS_OPTION_COUNT || opt_table[o].kind == KIND_STR) return errno = EINVAL;
  const opt_desc_t *d = &opt_table[o];
  if (value < d->min || (d->max >= 0 && value > d->max)) return errno = EINVAL;
  if (d->kind == KIND_SIZE && !size_allowed(d, (unsigned long long)value)) return errno = EINVAL;
  msi_options_init();
  atomic_store_explicit(&msi_option_values[o], value, memory_order_relaxed);
  atomic_fetch_or_explicit(&opt_given, 1u << o, memory_order_relaxed);
  msi_option_changed(o);
  return 0;
}

const char *ms_option_name(ms_option_t o) {
  if ((unsigned)o < MS_OPTION_COUNT) return opt_env(&opt_table[o]);
  errno = EINVAL;
  return NULL;
}

bool msi_option_given(ms_option_t o) {
  msi_options_init();
  return (unsigned)o < MS_OPTION_COUNT && (atomic_load_explicit(&opt_given, memory_order_relaxed) >> o & 1u);
}
bool msi_huge_pages_off(void) { return msi_opt(MS_OPTION_HUGE_PAGES) == 0 && msi_option_given(MS_OPTION_HUGE_PAGES); }

bool msi_option_invalid(ms_option_t o) {
  msi_options_init();
  return (unsigned)o < MS_OPTION_COUNT && (atomic_load_explicit(&opt_invalid, memory_order_relaxed) >> o & 1u);
}

size_t msi_options_describe(char *buf, size_t cap) {
  size_t n = 0;
  for (int i = 0; i < MS_OPTION_COUNT && n + 1 < cap; i++) {
    const opt_desc_t *d = &opt_table[i];
    const char *name = opt_env(d) + 9; /* past "MEMSPACE_" */
    if (d->kind == KIND_STR) {
      if (opt_strings[i]) n += msi_snprintf(buf + n, cap - n, " %s=%s", name, opt_strings[i]);
      continue;
    }
    long long v = msi_opt((ms_option_t)i);
    if (v == d->def && i != MS_OPTION_CACHE && !(i == MS_OPTION_HUGE_PAGES && msi_huge_pages_off()))
      continue; /* (HUGE_PAGES=0 given differs from unset: shown) */
    opt_desc_t cur = *d;
    cur.def = v;
    char text[64];
    n += msi_snprintf(buf + n, cap - n, " %s=%s", name, default_text(&cur, text, sizeof text));
  }
  return n < cap ? n : cap - 1;
}

/* for `memspace info` and docs: the option's one-line description */
const char *msi_option_doc(ms_option_t o) { return (unsigned)o < MS_OPTION_COUNT ? opt_doc(&opt_table[o]) : NULL; }
