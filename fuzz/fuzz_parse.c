/* fuzz_parse: the size parser (ms_parse_size) against an independent reference parser written from the
   contract, and the MEMSPACE_* environment parsing (msi_options_init) on random environments: every option
   must end up either at its default or at a value in its range that matches what the variable says.
   options.c is included so the fuzzer can reset its read-once state between inputs. */
#include "options.c"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FAIL(...) do { fprintf(stderr, "fuzz_parse: " __VA_ARGS__); fputc('\n', stderr); abort(); } while (0)

/* Reference: optional leading and trailing spaces, decimal digits, optional K/M/G/T (any case) optionally
   followed by "iB", or a lone "B". Returns 0/EINVAL/ERANGE like ms_parse_size. */
static int ref_parse_size(const char *s, size_t *out) {
  size_t i = 0, n = strlen(s);
  while (i < n && s[i] == ' ') i++;
  size_t d0 = i;
  while (i < n && s[i] >= '0' && s[i] <= '9') i++;
  if (i == d0) return EINVAL;
  size_t d1 = i;
  unsigned shift = 0;
  if (i < n) {
    switch (s[i] | 0x20) {
    case 'k': shift = 10; break;
    case 'm': shift = 20; break;
    case 'g': shift = 30; break;
    case 't': shift = 40; break;
    default: break;
    }
  }
  if (shift) {
    i++;
    if (i < n && (s[i] | 0x20) == 'i') {
      if (i + 1 < n && (s[i + 1] | 0x20) == 'b') i += 2;
      else return EINVAL;
    } else if (i < n && (s[i] | 0x20) == 'b') {
      i++;
    }
  } else if (i < n && (s[i] | 0x20) == 'b') {
    i++;
  }
  while (i < n && s[i] == ' ') i++;
  if (i != n) return EINVAL;
  /* value with 128-bit arithmetic: no overflow tricks to share with the code under test */
  unsigned __int128 v = 0;
  for (size_t k = d0; k < d1; k++) {
    v = v * 10 + (unsigned)(s[k] - '0');
    if (v > (unsigned __int128)SIZE_MAX) return ERANGE;
  }
  v <<= shift;
  if (v > (unsigned __int128)SIZE_MAX) return ERANGE;
  *out = (size_t)v;
  return 0;
}

/* the leading digits alone exceed SIZE_MAX */
static bool digits_overflow(const char *s) {
  while (*s == ' ') s++;
  unsigned __int128 v = 0;
  for (; *s >= '0' && *s <= '9'; s++)
    if ((v = v * 10 + (unsigned)(*s - '0')) > (unsigned __int128)SIZE_MAX) return true;
  return false;
}

static void check_size(const char *s) {
  size_t a = 12345, b = 67890;
  int ra = ms_parse_size(s, &a), rb = ref_parse_size(s, &b);
  /* both a syntax error and too many digits: either answer is right (the digits are read first) */
  if (rb == EINVAL && ra == ERANGE && digits_overflow(s)) return;
  if (ra != rb) FAIL("ms_parse_size(\"%s\") returned %d, reference %d", s, ra, rb);
  if (ra == 0 && a != b) FAIL("ms_parse_size(\"%s\") = %zu, reference %zu", s, a, b);
  if (ra != 0 && a != 12345) FAIL("ms_parse_size(\"%s\") failed (%d) but wrote %zu", s, ra, a);
}

/* reference integer: spaces around it, optional '-', digits, nothing else, fits in long long */
static int ref_parse_int(const char *s, long long *out) {
  char *end;
  while (*s == ' ') s++;
  if (!*s || (*s != '-' && (*s < '0' || *s > '9'))) return EINVAL;
  if (*s == '-' && (s[1] < '0' || s[1] > '9')) return EINVAL;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  while (*end == ' ') end++;
  if (*end) return EINVAL;
  if (errno == ERANGE) return ERANGE;
  *out = v;
  return 0;
}

static void check_options(char **env) {
  extern char **environ;
  char **saved = environ;
  /* back to the state before the first read */
  atomic_store(&opt_state, 0);
  for (int i = 0; i < MS_OPTION_COUNT; i++) {
    atomic_store(&msi_option_values[i], opt_table[i].def);
    opt_strings[i] = NULL;
  }
  environ = env;
  /* the warnings for invalid values are expected: keep them out of the fuzzer's log */
  int saved_err = dup(2), devnull = open("/dev/null", O_WRONLY);
  if (devnull >= 0) dup2(devnull, 2);
  msi_options_init();
  if (saved_err >= 0) { dup2(saved_err, 2); close(saved_err); }
  if (devnull >= 0) close(devnull);
  environ = saved;

  for (int i = 0; i < MS_OPTION_COUNT; i++) {
    const opt_desc_t *d = &opt_table[i];
    long long v = msi_opt((ms_option_t)i);
    /* what the environment says: the first entry with this name */
    const char *s = NULL;
    size_t n = strlen(opt_env(d));
    for (char **e = env; *e; e++)
      if (strncmp(*e, opt_env(d), n) == 0 && (*e)[n] == '=') { s = *e + n + 1; break; }
    if (d->kind == KIND_STR) { /* the value without the spaces around it, a relative one after the current
                                  directory (when the whole fits); nothing but spaces: unset */
      const char *t = s ? s + strspn(s, " ") : NULL;
      size_t len = t ? strlen(t) : 0;
      while (len && t[len - 1] == ' ') len--;
      const char *got = opt_strings[i];
      char want[2 * STR_COPY_MAX] = "";
      if (len && t[0] != '/' && getcwd(want, STR_COPY_MAX) && strlen(want) + 1 + len < STR_COPY_MAX) {
        if (strcmp(want, "/") != 0) strcat(want, "/");
      } else {
        want[0] = 0;
      }
      size_t at = strlen(want);
      if (len) memcpy(want + at, t, len);
      want[at + len] = 0;
      if (!len) { if (got) FAIL("%s unset or blank but string option set", opt_env(d)); }
      else if (got && strcmp(got, want) != 0)
        FAIL("%s: string option is not the value without the spaces around it", opt_env(d));
      else if (!got && len < 4000) FAIL("%s: string option unset", opt_env(d));
      continue;
    }
    if (!s) {
      if (v != d->def) FAIL("%s unset but value %lld != default %lld", opt_env(d), v, d->def);
      continue;
    }
    if (v == d->def) continue; /* default kept (invalid value) or the value equals the default */
    if (v < d->min || (d->max >= 0 && v > d->max))
      FAIL("%s='%s' gave %lld outside [%lld, %lld]", opt_env(d), s, v, d->min, d->max);
    switch (d->kind) {
    case KIND_BOOL:
      if (v != 0 && v != 1) FAIL("%s='%s' gave boolean %lld", opt_env(d), s, v);
      break;
    case KIND_SIZE: {
      size_t ref;
      if (ref_parse_size(s, &ref) != 0 || (long long)ref != v)
        FAIL("%s='%s' gave %lld, the size parser says otherwise", opt_env(d), s, v);
      break;
    }
    case KIND_INT: {
      long long ref;
      if (ref_parse_int(s, &ref) != 0 || ref != v) FAIL("%s='%s' gave %lld", opt_env(d), s, v);
      break;
    }
    case KIND_ENUM: {
      long long ref;
      /* a number, or a name from the list: a name can only give an index in range, checked above */
      if (ref_parse_int(s, &ref) == 0 && ref != v) FAIL("%s='%s' gave %lld", opt_env(d), s, v);
      break;
    }
    case KIND_STR: break;
    }
  }
}

/* Input: byte 0 picks the mode. Mode 0: the rest is one size string. Otherwise the rest is lines; a line with
   '=' is a raw environment entry, else its first byte picks an option whose MEMSPACE_ name is prefixed. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  if (size > 4096) return 0;
  char text[4097 + 64];
  if (data[0] % 4 == 0) {
    size_t n = 0;
    for (size_t i = 1; i < size; i++)
      if (data[i]) text[n++] = (char)data[i];
    text[n] = 0;
    check_size(text);
    return 0;
  }
  static char storage[32][4200];
  char *env[33];
  int count = 0;
  size_t i = 1;
  while (i < size && count < 32) {
    size_t j = i;
    while (j < size && data[j] != '\n') j++;
    char *line = storage[count];
    size_t n = 0;
    bool has_eq = memchr(data + i, '=', j - i) != NULL;
    size_t k = i;
    if (!has_eq) {
      int opt = k < j ? data[k++] % MS_OPTION_COUNT : 0;
      n = (size_t)snprintf(line, 80, "%s=", opt_env(&opt_table[opt]));
    }
    for (; k < j; k++)
      if (data[k]) line[n++] = (char)data[k];
    line[n] = 0;
    env[count++] = line;
    i = j + 1;
  }
  env[count] = NULL;
  char *lines[33]; /* the option reader removes invalid and unknown variables from the environment it reads */
  memcpy(lines, env, sizeof lines);
  check_options(env);
  /* every value string through the size parser too */
  for (int e = 0; e < count; e++) {
    const char *eq = strchr(lines[e], '=');
    check_size(eq ? eq + 1 : lines[e]);
  }
  return 0;
}
