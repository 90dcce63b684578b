/* SPDX-License-Identifier: MIT */
/* msg.c: messages without malloc. A tiny printf (the subset listed in internal.h) into a stack buffer,
   written to stderr with write(2). */
#include "internal.h"
#include "os.h"
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct { char *buf; size_t cap, len; } out_t;

static void put(out_t *o, char c) {
  if (o->len + 1 < o->cap) o->buf[o->len] = c;
  o->len++;
}

static void put_num(out_t *o, unsigned long long v, unsigned base, bool neg, int width, char pad, bool left) {
  char tmp[24];
  int n = 0;
  do { tmp[n++] = "0123456789abcdef"[v % base]; v /= base; } while (v);
  if (neg) tmp[n++] = '-';
  int fill = width > n ? width - n : 0;
  if (!left) while (fill-- > 0) put(o, pad);
  while (n) put(o, tmp[--n]);
  if (left) while (fill-- > 0) put(o, ' ');
}

/* One byte of a message's argument. With `esc`, a byte a terminal would act on shows as \xNN instead: the C0
   controls and DEL, and a C1 control (0x80-0x9f) as UTF-8 writes it (0xc2 first) or alone (any such byte that
   does not continue a UTF-8 sequence in progress: after ASCII, after a complete character, after 0xff), so a
   space name or option value such as "\x1b[2J" cannot clear or retitle the terminal reading stderr, while other
   UTF-8 text stays as it is. `cont` says the byte continues a sequence its lead byte started, `next` is the byte
   after it (0 at the end); returns how many bytes of the argument it took (2 for an escaped 0xc2 pair). */
static size_t put_arg_byte(out_t *o, bool cont, unsigned char c, unsigned char next, bool esc) {
  bool c1_pair = c == 0xc2 && next >= 0x80 && next <= 0x9f;
  bool ctl = c < 0x20 || c == 0x7f || (c >= 0x80 && c <= 0x9f && !cont);
  if (!esc || (!ctl && !c1_pair)) { put(o, (char)c); return 1; }
  for (size_t k = 0; k < (c1_pair ? 2u : 1u); k++) {
    unsigned char b = k ? next : c;
    put(o, '\\'), put(o, 'x'), put(o, "0123456789abcdef"[b >> 4]), put(o, "0123456789abcdef"[b & 15]);
  }
  return c1_pair ? 2 : 1;
}

/* the bytes s[0..n) of an argument (esc: as put_arg_byte shows them); `need` counts the continuation bytes the
   last lead byte still expects */
static void put_arg(out_t *o, const char *s, size_t n, bool esc) {
  const unsigned char *u = (const unsigned char *)s;
  unsigned need = 0;
  for (size_t i = 0; i < n;) {
    unsigned char c = u[i];
    bool cont = need && c >= 0x80 && c <= 0xbf;
    size_t took = put_arg_byte(o, cont, c, i + 1 < n ? u[i + 1] : 0, esc);
    need = took == 2 ? 0 : cont ? need - 1 : c >= 0xc2 && c <= 0xdf ? 1 : c >= 0xe0 && c <= 0xef ? 2 : c >= 0xf0 && c <= 0xf4 ? 3 : 0;
    i += took;
  }
}

/* as msi_vsnprintf; a %s argument longer than str_max shows its first and last str_max/2 bytes around "...";
   with `esc` (messages) the control bytes of %s and %c arguments show escaped (put_arg_byte) */
static size_t format(char *buf, size_t cap, const char *fmt, va_list ap, size_t str_max, bool esc) {
  out_t o = {buf, cap, 0};
  for (const char *f = fmt; *f; f++) {
    if (*f != '%') { put(&o, *f); continue; }
    f++;
    bool left = false;
    char pad = ' ';
    int width = 0;
    if (*f == '-') { left = true; f++; }
    if (*f == '0') { pad = '0'; f++; }
    while (*f >= '0' && *f <= '9') width = width * 10 + (*f++ - '0');
    int lng = 0; /* 1 long, 2 long long, 3 size_t */
    if (*f == 'z') { lng = 3; f++; }
    while (*f == 'l') { lng++; f++; }
    switch (*f) {
    case 's': {
      const char *s = va_arg(ap, const char *);
      if (!s) s = "(null)";
      size_t len = strlen(s), head = len > str_max ? str_max / 2 : len, tail = len > str_max ? str_max / 2 : 0;
      out_t count = {NULL, 0, head > 0 && tail > 0 ? 3 : 0}; /* the width the argument takes, as shown */
      put_arg(&count, s, head, esc), put_arg(&count, s + len - tail, tail, esc);
      int n = count.len > INT32_MAX ? INT32_MAX : (int)count.len, fill = width > n ? width - n : 0;
      if (!left) while (fill-- > 0) put(&o, ' ');
      put_arg(&o, s, head, esc);
      if (tail) put(&o, '.'), put(&o, '.'), put(&o, '.'), put_arg(&o, s + len - tail, tail, esc);
      if (left) while (fill-- > 0) put(&o, ' ');
      break;
    }
    case 'c': {
      char c = (char)va_arg(ap, int);
      put_arg(&o, &c, 1, esc);
      break;
    }
    case 'd': case 'i': {
      long long v = lng == 0 ? va_arg(ap, int) : lng == 1 ? va_arg(ap, long) : lng == 3 ? (long long)va_arg(ap, ptrdiff_t) : va_arg(ap, long long);
      put_num(&o, v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v, 10, v < 0, width, pad, left);
      break;
    }
    case 'u': case 'x': {
      unsigned long long v = lng == 0 ? va_arg(ap, unsigned) : lng == 1 ? va_arg(ap, unsigned long) : lng == 3 ? va_arg(ap, size_t) : va_arg(ap, unsigned long long);
      put_num(&o, v, *f == 'x' ? 16 : 10, false, width, pad, left);
      break;
    }
    case 'p': put(&o, '0'); put(&o, 'x'); put_num(&o, (uintptr_t)va_arg(ap, void *), 16, false, 0, ' ', false); break;
    case '%': put(&o, '%'); break;
    case 0: f--; break;
    default: put(&o, '%'); put(&o, *f); break;
    }
  }
  if (cap) buf[o.len < cap ? o.len : cap - 1] = 0;
  return o.len;
}

const char *msi_escape(const char *s, char *buf, size_t cap) {
  out_t o = {buf, cap, 0};
  put_arg(&o, s, strlen(s), true);
  if (cap) buf[o.len < cap ? o.len : cap - 1] = 0;
  return buf;
}

size_t msi_vsnprintf(char *buf, size_t cap, const char *fmt, va_list ap) { return format(buf, cap, fmt, ap, SIZE_MAX, false); }

size_t msi_snprintf(char *buf, size_t cap, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  size_t n = msi_vsnprintf(buf, cap, fmt, ap);
  va_end(ap);
  return n;
}

/* A write to a pipe whose reader has gone raises SIGPIPE, which would kill a program that never writes there itself
   (a warning, or the statistics at exit, on a stderr piped into `head -1` or a log collector that died): SIGPIPE is
   blocked in this thread for the write, and the one the write raised is taken back (unless one was pending
   already) with the system call itself (glibc's sigtimedwait is a cancellation point). */
int msi_write_fd(int fd, const char *text, size_t len) {
  int saved = errno, err = 0;
  sigset_t pipe_set, old, pending;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  bool blocked = pthread_sigmask(SIG_BLOCK, &pipe_set, &old) == 0;
  bool was_pending = blocked && sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE);
  while (len) {
    ssize_t w = msi_os_write(fd, text, len);
    if (w <= 0) {
      err = w < 0 ? errno : EIO;
      break;
    }
    text += w;
    len -= (size_t)w;
  }
  if (err == EPIPE && blocked && !was_pending) msi_os_signal_take(SIGPIPE);
  if (blocked) pthread_sigmask(SIG_SETMASK, &old, NULL);
  errno = saved;
  return err;
}

/* A message too long for the buffer is formatted again with every string argument cut in its middle (a long path
   would otherwise push out the reason after it) */
static void emit_to(int fd, const char *prefix, const char *fmt, va_list ap) {
  char buf[1024];
  size_t n = msi_snprintf(buf, sizeof buf, "memspace: %s", prefix);
  if (n >= sizeof buf) n = sizeof buf - 1;
  va_list again;
  va_copy(again, ap);
  size_t m = format(buf + n, sizeof buf - n - 1, fmt, ap, SIZE_MAX, true);
  if (m >= sizeof buf - n - 1) m = format(buf + n, sizeof buf - n - 1, fmt, again, 160, true);
  va_end(again);
  n += m < sizeof buf - n - 1 ? m : sizeof buf - n - 2;
  buf[n++] = '\n';
  msi_write_fd(fd, buf, n);
}
/* A program that closed stderr may have opened a file or a socket of its own as descriptor 2 (the lowest free one):
   a message there would corrupt its data or its protocol (glibc's and mimalloc's messages go to descriptor 2
   whatever it is). A message is not written to a descriptor 2 that is close-on-exec: a standard error inherited
   at exec, or put in place by dup2 (a shell's `2>file`, a test runner's capture), never is, and a descriptor
   opened by Python, Rust, Go or with O_CLOEXEC always is. One opened without O_CLOEXEC (C's open and fopen by
   default) cannot be told from a standard error and gets the message. One fcntl per message. */
static void emit(const char *prefix, const char *fmt, va_list ap) {
  if (!msi_os_fd_cloexec(2)) emit_to(2, prefix, fmt, ap);
}

/* the message of a printf-like function's arguments, after `prefix` */
#define EMIT_ARGS(prefix)                                                                                     \
  do {                                                                                                        \
    va_list ap;                                                                                               \
    va_start(ap, fmt);                                                                                        \
    emit(prefix, fmt, ap);                                                                                    \
    va_end(ap);                                                                                               \
  } while (0)

MSI_COLD void msi_verbose(const char *fmt, ...) {
  if (msi_opt(MS_OPTION_VERBOSE)) EMIT_ARGS("");
}
void msi_warning(const char *fmt, ...) { EMIT_ARGS("warning: "); }
void msi_error(const char *fmt, ...) { EMIT_ARGS("error: "); }
void msi_error_to(int fd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  emit_to(fd, "error: ", fmt, ap);
  va_end(ap);
}
void msi_fatal(const char *fmt, ...) {
  EMIT_ARGS("fatal: ");
  abort();
}

/* the errno values system calls answer, by name and meaning (strerror may allocate or take locale locks); NULL
   for another */
static const char *errno_text(int e) {
  switch (e) {
    case 0: return "no error code set";
    case EPERM: return "EPERM: operation not permitted";
    case ENOENT: return "ENOENT: no such file or directory";
    case ESRCH: return "ESRCH: no such process";
    case EINTR: return "EINTR: interrupted";
    case EIO: return "EIO: input/output error";
    case ENXIO: return "ENXIO: no such device or address";
    case EBADF: return "EBADF: bad file descriptor";
    case EAGAIN: return "EAGAIN: resource temporarily unavailable";
    case ENOMEM: return "ENOMEM: out of memory";
    case EACCES: return "EACCES: permission denied";
    case EFAULT: return "EFAULT: bad address";
    case EBUSY: return "EBUSY: device or resource busy";
    case EEXIST: return "EEXIST: file exists";
    case EXDEV: return "EXDEV: cross-device link";
    case ENODEV: return "ENODEV: no such device";
    case ENOTDIR: return "ENOTDIR: not a directory";
    case EISDIR: return "EISDIR: is a directory";
    case EINVAL: return "EINVAL: invalid argument";
    case ENFILE: return "ENFILE: too many open files in the system";
    case EMFILE: return "EMFILE: too many open files (RLIMIT_NOFILE)";
    case ETXTBSY: return "ETXTBSY: text file busy";
    case EFBIG: return "EFBIG: file too large (RLIMIT_FSIZE or the filesystem's limit)";
    case ENOSPC: return "ENOSPC: no space left on device";
    case ESPIPE: return "ESPIPE: illegal seek";
    case EROFS: return "EROFS: read-only filesystem";
    case EPIPE: return "EPIPE: broken pipe";
    case ERANGE: return "ERANGE: result out of range";
    case ENAMETOOLONG: return "ENAMETOOLONG: file name too long";
    case ENOSYS: return "ENOSYS: function not implemented";
    case ELOOP: return "ELOOP: too many levels of symbolic links";
    case EOVERFLOW: return "EOVERFLOW: value too large";
    case EOPNOTSUPP: return "EOPNOTSUPP: operation not supported";
    case ESTALE: return "ESTALE: stale file handle";
    case EDQUOT: return "EDQUOT: disk quota exceeded";
    default: return NULL;
  }
}

const char *msi_strerror(int e) {
  const char *t = errno_text(e);
  return t ? t : "an unlisted error code";
}

const char *msi_errtext(int e, char *buf, size_t cap) {
  const char *t = errno_text(e);
  if (t) return t;
  msi_snprintf(buf, cap, "error code %d", e);
  return buf;
}

const char *msi_sizetext(unsigned long long n, char *buf, size_t cap) {
  static const char *const units[] = {"KiB", "MiB", "GiB", "TiB"};
  if (n < 1024) {
    msi_snprintf(buf, cap, "%llu %s", n, n == 1 ? "byte" : "bytes");
    return buf;
  }
  unsigned u = 0;
  while (u + 1 < sizeof units / sizeof units[0] && n >> (10 * (u + 2)) != 0) u++;
  unsigned shift = 10 * (u + 1);
  unsigned long long whole = n >> shift, tenth = ((n & ((1ull << shift) - 1)) * 10) >> shift;
  if (tenth) msi_snprintf(buf, cap, "%llu.%llu %s", whole, tenth, units[u]);
  else msi_snprintf(buf, cap, "%llu %s", whole, units[u]);
  return buf;
}
