/* SPDX-License-Identifier: MIT */
/* run.c: `memspace run [options] -- PROGRAM ARGS...`: exec the program with the library preloaded (absolute
   path appended to any LD_PRELOAD) and the matching MEMSPACE_* variables. Exit status is the program's.
   Refused up front with exit status 2 and the reason: a bad option or value (said first and alone, before the
   machine is looked at), a process space larger than the machine can back, a spill directory the program could
   not use, an LD_PRELOAD whose library defines malloc (it would serve the program instead of memspace), and a
   library path LD_PRELOAD cannot hold. */
#include "bench.h"
#include "memspace.h"
#include "tool.h"
#include "../src/space/space_internal.h"
#include "route.h"
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

/* a file execve can start: an executable regular file (a directory, a FIFO or a device gives EACCES, and execvp
   looks further) */
static bool runnable(const char *path) {
  struct stat st;
  return access(path, X_OK) == 0 && stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Finds `prog` on PATH like execvp does; returns 0 and the path, or -1. */
static int resolve(const char *prog, char *out, size_t cap) {
  if (strchr(prog, '/')) { snprintf(out, cap, "%s", prog); return runnable(out) ? 0 : -1; }
  const char *path = getenv("PATH");
  if (!path) path = "/usr/bin:/bin";
  for (;;) { /* (a trailing ':' ends the list with an empty entry too) */
    const char *colon = strchr(path, ':');
    size_t len = colon ? (size_t)(colon - path) : strlen(path);
    if (len) snprintf(out, cap, "%.*s/%s", (int)len, path, prog);
    else snprintf(out, cap, "./%s", prog); /* an empty entry: the current directory, as execvp takes it */
    if (runnable(out)) return 0;
    if (!colon) return -1;
    path = colon + 1;
  }
}

/* Why the dynamic loader would ignore LD_PRELOAD for this program, or NULL. Secure-execution mode (AT_SECURE) comes
   with a change of user or group (a setuid file owned by another user than the caller, setgid to another group)
   or with capabilities the file adds: none for root, which has them all (root running a setuid-root program or
   one with file capabilities keeps LD_PRELOAD). */
static const char *preload_ignored(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0) return NULL;
  if (((st.st_mode & S_ISUID) && st.st_uid != getuid()) || ((st.st_mode & S_ISGID) && st.st_gid != getgid()))
    return "it is setuid/setgid (secure-execution mode ignores LD_PRELOAD)";
  bool root = getuid() == 0 && geteuid() == 0;
  if (!root && getxattr(path, "security.capability", NULL, 0) > 0)
    return "it has file capabilities (secure-execution mode)";
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NULL;
  Elf64_Ehdr eh;
  const char *why = NULL;
  if (read(fd, &eh, sizeof eh) == (ssize_t)sizeof eh && memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 &&
      eh.e_ident[EI_CLASS] == ELFCLASS64) {
    int has_interp = 0;
    for (int i = 0; i < eh.e_phnum; i++) {
      Elf64_Phdr ph;
      if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + (uint64_t)i * eh.e_phentsize)) != (ssize_t)sizeof ph) break;
      if (ph.p_type == PT_INTERP) has_interp = 1;
    }
    if (!has_interp) why = "it is statically linked (no dynamic loader)";
  }
  close(fd);
  return why;
}

static int need_size(const char *opt, const char *value) {
  size_t v;
  if (!value) { fprintf(stderr, "memspace run: %s needs a value\n", opt); return -1; }
  if (ms_parse_size(value, &v) != 0) {
    fprintf(stderr, "memspace run: %s: '%s' is not a size (bytes, or a number with K, M, G or T)\n", opt, value);
    return -1;
  }
  /* the library takes a size option up to LLONG_MAX and ignores a larger one (a warning, then the default) */
  if (v > (size_t)LLONG_MAX) {
    fprintf(stderr, "memspace run: %s: '%s' is too large (at most %lld bytes)\n", opt, value, LLONG_MAX);
    return -1;
  }
  return 0;
}

/* A spill directory the program could not use: missing, not a directory, not writable. Returns the reason, or
   NULL when it is usable. */
static const char *spill_dir_problem(const char *dir) {
  struct stat st;
  if (stat(dir, &st) != 0) return errno == ENOENT ? "it does not exist" : strerror(errno);
  if (!S_ISDIR(st.st_mode)) return "it is not a directory";
  if (access(dir, W_OK | X_OK) != 0) return "it is not writable";
  return NULL;
}

/* true when the shared object at `path` defines `malloc` itself (its dynamic symbol table), i.e. would serve the
   program's malloc if loaded before memspace */
static bool defines_malloc(const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st;
  bool found = false;
  void *map = fstat(fd, &st) == 0 && st.st_size > (off_t)sizeof(Elf64_Ehdr)
                  ? mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
  close(fd);
  if (map == MAP_FAILED) return false;
  const char *base = map;
  size_t size = (size_t)st.st_size;
  const Elf64_Ehdr *eh = map;
  if (memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 && eh->e_ident[EI_CLASS] == ELFCLASS64 && eh->e_shoff < size &&
      eh->e_shnum <= (size - eh->e_shoff) / sizeof(Elf64_Shdr)) {
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(base + eh->e_shoff);
    for (unsigned i = 0; i < eh->e_shnum && !found; i++) {
      if (sh[i].sh_type != SHT_DYNSYM || sh[i].sh_link >= eh->e_shnum) continue;
      const Elf64_Shdr *str = &sh[sh[i].sh_link];
      if (sh[i].sh_offset > size || sh[i].sh_size > size - sh[i].sh_offset || str->sh_offset > size ||
          str->sh_size > size - str->sh_offset)
        continue;
      const Elf64_Sym *sym = (const Elf64_Sym *)(base + sh[i].sh_offset);
      for (size_t k = 0; k < sh[i].sh_size / sizeof *sym; k++)
        if (sym[k].st_shndx != SHN_UNDEF && sym[k].st_name < str->sh_size &&
            strncmp(base + str->sh_offset + sym[k].st_name, "malloc", str->sh_size - sym[k].st_name) == 0 &&
            strnlen(base + str->sh_offset + sym[k].st_name, str->sh_size - sym[k].st_name) == 6)
          found = true;
    }
  }
  munmap(map, size);
  return found;
}

/* The file the loader takes for an LD_PRELOAD entry without a '/': it searches the library path (LD_LIBRARY_PATH,
   its cache, the default directories), not the current directory; or for one with a dynamic string token
   ($LIB, ${PLATFORM}...), which it expands. Asked of the loader itself, with dlopen in a
   child process, so that the library's constructors run there and not in the tool. False: it cannot be loaded
   (the loader ignores such an entry too). */
static bool loader_path(const char *entry, char *out, size_t cap) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return false;
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    void *h = dlopen(entry, RTLD_LAZY | RTLD_LOCAL);
    struct link_map *lm = NULL;
    if (h && dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name && lm->l_name[0])
      (void)!write(fds[1], lm->l_name, strlen(lm->l_name));
    _exit(0);
  }
  close(fds[1]);
  size_t n = 0;
  ssize_t r;
  while (pid > 0 && n + 1 < cap && (r = read(fds[0], out + n, cap - 1 - n)) != 0) {
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) break;
    n += (size_t)r;
  }
  close(fds[0]);
  if (pid > 0)
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
    }
  out[n] = 0;
  return n > 0;
}

/* What an existing LD_PRELOAD holds, read entry by entry as the loader splits it (at ':' and spaces), in order,
   since the first library defining malloc serves the program: PRELOAD_SELF when an entry is memspace's library
   (its resolved path is `self`) before any other defining malloc, PRELOAD_OTHER when another one comes first (its
   entry into `out`), PRELOAD_NONE otherwise. */
enum { PRELOAD_NONE, PRELOAD_SELF, PRELOAD_OTHER };

/* The directory the loader's $ORIGIN names for the program at `path` (found on PATH): its executable's directory,
   with the links resolved (the loader reads /proc/self/exe). For a script ("#!"), the kernel runs its interpreter,
   whose directory that is; an interpreter that is a script itself is followed as the kernel follows it (at most
   4 levels: BINPRM_MAX_RECURSION). A file that is neither ELF nor "#!" (a script without one) the kernel refuses
   (ENOEXEC) and execvp runs it with /bin/sh: the directory is the shell's. False when the program cannot be read
   (the exec then fails on its own). */
static bool program_origin(const char *path, char *out, size_t cap) {
  char exe[PATH_MAX], line[PATH_MAX];
  snprintf(exe, sizeof exe, "%s", path);
  for (int level = 0; level <= 4; level++) { /* (a chain past 4 levels fails the exec: ELOOP) */
    int fd = open(exe, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* (a FIFO named by a "#!" line: never waited on) */
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) close(fd), fd = -1; /* execve refuses it */
    if (fd < 0) break;
    ssize_t n = read(fd, line, sizeof line - 1);
    close(fd);
    if (n < 0 || (n >= SELFMAG && memcmp(line, ELFMAG, SELFMAG) == 0)) break; /* (unreadable: execute-only) */
    char *interp = NULL;
    if (n > 2 && line[0] == '#' && line[1] == '!') {
      line[n] = 0;
      interp = line + 2 + strspn(line + 2, " \t");
      interp[strcspn(interp, " \t\n")] = 0;
    }
    if (!interp || !*interp) { /* ENOEXEC: execvp's fallback */
      snprintf(exe, sizeof exe, "%s", "/bin/sh");
      break;
    }
    snprintf(exe, sizeof exe, "%s", interp);
  }
  char real[PATH_MAX];
  if (!realpath(exe, real)) return false;
  char *slash = strrchr(real, '/');
  if (!slash) return false;
  slash[slash == real] = 0; /* "/prog": "/" */
  snprintf(out, cap, "%s", real);
  return true;
}

/* `entry` with the loader's $ORIGIN and ${ORIGIN} replaced by `origin` (the program's directory, where a dlopen in
   this tool would take the tool's); false when the result does not fit, or the entry names $ORIGIN and there is
   none (NULL) */
static bool expand_origin(const char *entry, const char *origin, char *out, size_t cap) {
  size_t n = 0;
  for (const char *p = entry; *p;) {
    size_t skip = strncmp(p, "$ORIGIN", 7) == 0 ? 7 : strncmp(p, "${ORIGIN}", 9) == 0 ? 9 : 0;
    if (skip && !origin) return false;
    const char *add = skip ? origin : p;
    size_t len = skip ? strlen(origin) : 1;
    if (n + len >= cap) return false;
    memcpy(out + n, add, len);
    n += len;
    p += skip ? skip : 1;
  }
  out[n] = 0;
  return true;
}

static int preload_scan(const char *list, const char *self, const char *origin, char *out, size_t cap) {
  while (*list) {
    size_t len = strcspn(list, ": ");
    if (len && len < cap) {
      snprintf(out, cap, "%.*s", (int)len, list);
      char found[PATH_MAX], abs[PATH_MAX], expanded[PATH_MAX];
      /* an entry with a '$' holds a token the loader expands ($LIB, $PLATFORM): dlopen expands it the same way,
         except $ORIGIN (expand_origin) */
      const char *entry = expand_origin(out, origin, expanded, sizeof expanded) ? expanded : NULL;
      bool plain = entry && strchr(entry, '/') && !strchr(entry, '$');
      const char *file = plain ? entry : entry && loader_path(entry, found, sizeof found) ? found : NULL;
      if (file && realpath(file, abs) && strcmp(abs, self) == 0) return PRELOAD_SELF;
      if (file && defines_malloc(file)) return PRELOAD_OTHER;
    }
    list += len + (list[len] ? 1 : 0);
  }
  return PRELOAD_NONE;
}

static bool names_run_option(const char *a);

/* the value of option `name` in argv[*i]: "--name VALUE" (moves *i past it) or "--name=VALUE"; false when the
   argument is another option. *value is NULL when none was given: nothing follows, or "--" or another of run's
   options does, which is never taken as a value ("--spill-dir -- prog" and "--spill-dir --stats" lack a
   directory; they do not name one "--" or "--stats"). */
static bool option_is(char **argv, int argc, int *i, const char *name, const char **value) {
  size_t n = strlen(name);
  const char *a = argv[*i];
  if (strncmp(a, name, n) != 0) return false;
  if (a[n] == '=') { *value = a + n + 1; return true; }
  if (a[n] != 0) return false;
  *value = *i + 1 < argc && strcmp(argv[*i + 1], "--") != 0 && !names_run_option(argv[*i + 1]) ? argv[*i + 1] : NULL;
  if (*value) (*i)++;
  return true;
}

static bool one_of(const char *v, const char *const *words) {
  for (; v && *words; words++)
    if (strcmp(v, *words) == 0) return true;
  return false;
}

/* The options, one row each: the parser matches arguments against this table only, and both usage texts (memspace
   --help, memspace run --help) print it, so an option cannot be accepted without being listed. */
typedef enum {
  RO_HEAP, RO_PURGE_DELAY, RO_SPACE_INITIAL, RO_SPACE_EXPAND, RO_SPACE_AT, RO_INHERIT, RO_SPILL_THRESHOLD, RO_SPILL,
  RO_SPILL_DIR, RO_SECURE, RO_STATS, RO_VERBOSE, RO_HELP, RO_COUNT
} run_opt_t;
static const struct {
  const char *name, *value, *help; /* value: its placeholder, NULL for a flag */
} run_opts[RO_COUNT] = {
    [RO_HEAP] = {"--heap", "PRESET", "cache preset: unlimited, performance, size or none (MEMSPACE_CACHE)"},
    [RO_PURGE_DELAY] = {"--purge-delay", "MS", "idle ms before free memory goes back; -1 never (MEMSPACE_PURGE_DELAY)"},
    [RO_SPACE_INITIAL] = {"--space-initial", "SIZE", "serve the program from a process space (MEMSPACE_SPACE_INITIAL)"},
    [RO_SPACE_EXPAND] = {"--space-expand", "SIZE", "the space's growth step; 0 = fixed size (MEMSPACE_SPACE_EXPAND)"},
    [RO_SPACE_AT] = {"--space-at", "start|firstalloc", "when the space is made (MEMSPACE_SPACE_AT)"},
    [RO_INHERIT] = {"--inherit", NULL, "children get the same space settings"},
    [RO_SPILL_THRESHOLD] = {"--spill-threshold", "SIZE", "back blocks of SIZE and more with files (MEMSPACE_SPILL_*)"},
    [RO_SPILL] = {"--spill", NULL, "large blocks to files once the memory budget runs short (threshold auto)"},
    [RO_SPILL_DIR] = {"--spill-dir", "DIR", "the directory of the spill files (MEMSPACE_SPILL_DIR)"},
    [RO_SECURE] = {"--secure", NULL, "the secure mode's checks (MEMSPACE_SECURE=1)"},
    [RO_STATS] = {"--stats", NULL, "print statistics at exit (MEMSPACE_SHOW_STATS=1)"},
    [RO_VERBOSE] = {"--verbose", NULL, "say that memspace is active, and its decisions (MEMSPACE_VERBOSE=1)"},
    [RO_HELP] = {"--help", NULL, "this text (also -h)"},
};

/* a names one of run's options, alone or with "=VALUE" ("-h" too) */
static bool names_run_option(const char *a) {
  if (strcmp(a, "-h") == 0) return true;
  for (int k = 0; k < RO_COUNT; k++) {
    size_t n = strlen(run_opts[k].name);
    if (strncmp(a, run_opts[k].name, n) == 0 && (a[n] == 0 || a[n] == '=')) return true;
  }
  return false;
}

/* the row argv[*i] names (its value in *value, *i moved past a separate one), or RO_COUNT */
static run_opt_t run_option(char **argv, int argc, int *i, const char **value) {
  if (strcmp(argv[*i], "-h") == 0) return RO_HELP;
  for (int k = 0; k < RO_COUNT; k++) {
    if (run_opts[k].value ? option_is(argv, argc, i, run_opts[k].name, value) : strcmp(argv[*i], run_opts[k].name) == 0)
      return (run_opt_t)k;
  }
  return RO_COUNT;
}

void tool_run_synopsis(FILE *f, const char *indent) {
  int col = fprintf(f, "%smemspace run", indent);
  for (int k = 0; k < RO_COUNT; k++) {
    if (k == RO_HELP) continue;
    int w = (int)strlen(run_opts[k].name) + 3 + (run_opts[k].value ? (int)strlen(run_opts[k].value) + 1 : 0);
    if (col + w > 110) col = fprintf(f, "\n%s            ", indent) - 1;
    col += fprintf(f, " [%s%s%s]", run_opts[k].name, run_opts[k].value ? " " : "", run_opts[k].value ? run_opts[k].value : "");
  }
  fprintf(f, "%s-- PROGRAM ARGS...\n", col + 20 > 110 ? "\n                   " : " ");
}

static void usage(void) {
  printf("usage: memspace run [OPTIONS] [--] PROGRAM ARGS...   (PROGRAM runs with libmemspace preloaded)\n");
  for (int k = 0; k < RO_COUNT; k++) {
    char head[64];
    snprintf(head, sizeof head, "%s%s%s", run_opts[k].name, run_opts[k].value ? " " : "", run_opts[k].value ? run_opts[k].value : "");
    printf("  %-34s %s\n", head, run_opts[k].help);
  }
  printf("  SIZE: bytes, or a number with K, M, G or T. Options also take the form --name=VALUE. --spill-threshold\n"
         "  takes a SIZE or auto, as --spill does (docs/spill.md); given both, --spill-threshold's value applies.\n"
         "  See docs/options.md.\n");
}

/* MEMSPACE_SPILL_THRESHOLD as the program's library will read it: a size above 0 or auto (" 0 ", "0K" and an
   invalid value, which the library reports and replaces by its default 0, spill nothing) */
static bool spill_on(void) {
  long long v;
  return msi_option_parse(MS_OPTION_SPILL_THRESHOLD, getenv("MEMSPACE_SPILL_THRESHOLD"), &v) == 0 && v != 0;
}

/* --verbose given: the library in this process read MEMSPACE_VERBOSE before the option set it */
static bool verbose_flag;

/* The checks of the machine behind two options, made once every argument is known to be valid (an argument error
   is said first, alone): a process space the machine cannot back (`initial` bytes, from --space-initial or the
   environment's MEMSPACE_SPACE_INITIAL, which the program reads as well) would be pre-faulted into memory pressure and
   the program OOM-killed without a word (the library refuses it too, at process start; checked without locking:
   the library runs the space unlocked when the lock is refused), and a spill directory the program could not use.
   0, or -1 after saying why. */
static int check_machine(const char *space_from, const char *space_text, long long initial, const char *spill_dir) {
  char why[160];
  if (initial > 0 && msi_space_backing((size_t)initial, false, why, sizeof why)) {
    fprintf(stderr, "memspace run: %s%s: a space of %lld bytes cannot be backed: %s\n", space_from, space_text, initial, why);
    return -1;
  }
  if (spill_dir) {
    const char *problem = spill_dir_problem(spill_dir);
    if (problem) {
      fprintf(stderr, "memspace run: cannot spill to %s: %s (choose another with --spill-dir)\n", spill_dir, problem);
      return -1;
    }
    char abs[PATH_MAX];
    setenv("MEMSPACE_SPILL_DIR", realpath(spill_dir, abs) ? abs : spill_dir, 1);
  }
  return 0;
}

/* Parses the options into MEMSPACE_* variables; returns the index of the program, or -1 (exit 2) / -2 (exit 0).
   Every argument is checked before anything else is looked at (check_machine). */
static int parse_options(int argc, char **argv) {
  static const char *const presets[] = {"unlimited", "performance", "size", "none", NULL};
  static const char *const ats[] = {"start", "firstalloc", NULL};
  bool space_other = false, spill_threshold = false, spill_auto = false;
  const char *space_initial_v = NULL, *space_expand_v = NULL, *spill_dir_v = NULL;
  int i = 1;
  for (; i < argc; i++) {
    const char *a = argv[i], *v = NULL;
    if (strcmp(a, "--") == 0) { i++; break; }
    run_opt_t o = run_option(argv, argc, &i, &v);
    switch (o) {
    case RO_HEAP:
      if (!one_of(v, presets)) { fprintf(stderr, "memspace run: --heap takes unlimited, performance, size or none\n"); return -1; }
      setenv("MEMSPACE_CACHE", v, 1);
      continue;
    case RO_PURGE_DELAY: {
      /* digits with an optional '-', as the library reads MEMSPACE_PURGE_DELAY (strtol's leading blanks and '+'
         would pass here, then the library would warn and run with the default) */
      const char *d = v && *v == '-' ? v + 1 : v;
      bool digits = d && *d && strspn(d, "0123456789") == strlen(d);
      long ms = digits ? strtol(v, NULL, 10) : 0;
      if (!digits || ms < -1 || ms > 86400000) {
        fprintf(stderr, "memspace run: --purge-delay takes milliseconds (0 to 86400000) or -1 (never)\n");
        return -1;
      }
      setenv("MEMSPACE_PURGE_DELAY", v, 1);
      continue;
    }
    case RO_SPACE_INITIAL:
      if (need_size(a, v)) return -1;
      setenv("MEMSPACE_SPACE_INITIAL", v, 1), space_initial_v = v;
      continue;
    case RO_SPACE_EXPAND:
      if (need_size(a, v)) return -1;
      setenv("MEMSPACE_SPACE_EXPAND", v, 1), space_other = true, space_expand_v = v;
      continue;
    case RO_SPACE_AT:
      if (!one_of(v, ats)) { fprintf(stderr, "memspace run: --space-at takes start or firstalloc\n"); return -1; }
      setenv("MEMSPACE_SPACE_AT", v, 1), space_other = true;
      continue;
    case RO_SPILL_THRESHOLD:
      if (!(v && strcmp(v, "auto") == 0) && need_size(a, v)) return -1;
      setenv("MEMSPACE_SPILL_THRESHOLD", v, 1), spill_threshold = true;
      continue;
    case RO_SPILL: spill_auto = true; continue; /* MEMSPACE_SPILL_THRESHOLD=auto, unless --spill-threshold gives a size */
    case RO_SPILL_DIR:
      if (!v || !*v) { fprintf(stderr, "memspace run: --spill-dir needs a directory\n"); return -1; }
      spill_dir_v = v;
      continue;
    case RO_INHERIT: setenv("MEMSPACE_SPACE_INHERIT", "1", 1), space_other = true; continue;
    case RO_STATS: setenv("MEMSPACE_SHOW_STATS", "1", 1); continue;
    case RO_SECURE: setenv("MEMSPACE_SECURE", "1", 1); continue;
    case RO_VERBOSE: setenv("MEMSPACE_VERBOSE", "1", 1), verbose_flag = true; continue;
    case RO_HELP: usage(); return -2;
    case RO_COUNT: break;
    }
    if (a[0] == '-') {
      fprintf(stderr, "memspace run: unknown option '%s' (memspace run --help lists them)\n", a);
      return -1;
    }
    break; /* the program, without "--" */
  }
  /* the space's size as the program's library reads it (--space-initial, else the environment's): 0, and an invalid
     value (the library reports it and keeps the default 0), make no space, and the space options nothing */
  long long initial = 0;
  const char *initial_v = space_initial_v ? space_initial_v : getenv("MEMSPACE_SPACE_INITIAL");
  if (initial_v && msi_option_parse(MS_OPTION_SPACE_INITIAL, initial_v, &initial) != 0) initial = 0;
  if (space_other && initial <= 0) {
    fprintf(stderr, "memspace run: --space-expand, --space-at and --inherit need --space-initial SIZE (above 0)\n");
    return -1;
  }
  /* a step no expansion of that space could take (--space-expand, else the environment's, which the program reads as
     well): the library would warn and run the space at a fixed size */
  const char *expand_v = space_expand_v ? space_expand_v : getenv("MEMSPACE_SPACE_EXPAND");
  long long expand;
  if (initial > 0 && expand_v && msi_option_parse(MS_OPTION_SPACE_EXPAND, expand_v, &expand) == 0 &&
      (size_t)expand > msi_space_expand_max((size_t)initial)) {
    fprintf(stderr, "memspace run: %s%s: above the largest step a space of %lld bytes can take (%zu bytes)\n",
            space_expand_v ? "--space-expand " : "MEMSPACE_SPACE_EXPAND=", expand_v, initial,
            msi_space_expand_max((size_t)initial));
    return -1;
  }
  if (i >= argc) { fprintf(stderr, "memspace run: no program given (memspace run [options] -- PROGRAM ARGS...)\n"); return -1; }
  if (check_machine(space_initial_v ? "--space-initial " : "MEMSPACE_SPACE_INITIAL=", initial_v ? initial_v : "", initial,
                    spill_dir_v))
    return -1;
  if (spill_auto && !spill_threshold) setenv("MEMSPACE_SPILL_THRESHOLD", "auto", 1);
  if (spill_dir_v && !spill_on())
    fprintf(stderr, "memspace run: a spill directory without --spill or a spill threshold (--spill-threshold SIZE): nothing "
                    "is spilled\n");
  return i;
}

int tool_run(int argc, char **argv) {
  int i = parse_options(argc, argv);
  if (i == -2) return 0;
  if (i < 0) return 2;
  const char *lib = msb_memspace_lib();
  char abs[PATH_MAX];
  if (!realpath(lib, abs)) {
    fprintf(stderr, "memspace run: cannot find the library %s: %s (run make first)\n", lib, strerror(errno));
    return 127;
  }
  /* the loader splits LD_PRELOAD at spaces and colons, with no escape: such a path would run the program without
     memspace (the loader's "cannot be preloaded: ignored" and exit status 0) */
  if (strpbrk(abs, " \t:")) {
    fprintf(stderr, "memspace run: the library's path '%s' holds a space or ':', where the loader splits LD_PRELOAD: "
                    "the program would run without memspace; build or install memspace under a path without them\n", abs);
    return 2;
  }
  const char *old = getenv("LD_PRELOAD");
  char first[PATH_MAX], prog[PATH_MAX], origin[PATH_MAX];
  bool found = resolve(argv[i], prog, sizeof prog) == 0; /* (the program as execvp finds it) */
  bool has_origin = old && *old && found && program_origin(prog, origin, sizeof origin);
  int held = old && *old ? preload_scan(old, abs, has_origin ? origin : NULL, first, sizeof first) : PRELOAD_NONE;
  if (held == PRELOAD_OTHER) {
    fprintf(stderr, "memspace run: LD_PRELOAD already holds %s, which defines malloc and would serve the program "
                    "instead of memspace; remove it from LD_PRELOAD\n", first);
    return 2;
  }
  if (old && *old && held == PRELOAD_NONE) {
    size_t n = strlen(old) + strlen(abs) + 2;
    char *joined = malloc(n);
    if (!joined) return 127;
    snprintf(joined, n, "%s:%s", old, abs);
    setenv("LD_PRELOAD", joined, 1);
  } else if (!old || !*old) {
    setenv("LD_PRELOAD", abs, 1);
  }
  /* MEMSPACE_VERBOSE parsed as the library parses it (1/true/yes/on), not just "set and not 0", or --verbose */
  if ((verbose_flag || ms_option_get(MS_OPTION_VERBOSE) == 1) && found) {
    const char *why = preload_ignored(prog);
    if (why) fprintf(stderr, "memspace: %s will not use memspace: %s\n", prog, why);
  }
  /* the spill directory is checked here, once for the process tree, as it starts: the library checks it only at a
     process's first spill candidate, and under MEMSPACE_RUN_PID says a problem only under MEMSPACE_VERBOSE, the
     program itself too when MEMSPACE_RUN_SPILL_CHECKED names it (src/spill/files.c, docs/spill.md). A run
     exec'ed by a run that checked (the same pid) does not check again. */
  char pid[24];
  snprintf(pid, sizeof pid, "%ld", (long)getpid());
  const char *checked = getenv("MEMSPACE_RUN_SPILL_CHECKED");
  if (spill_on() && !(checked && strcmp(checked, pid) == 0)) {
    /* the directory the program takes: the variable without the spaces around it (nothing but spaces: none) */
    const char *env_dir = getenv("MEMSPACE_SPILL_DIR");
    char dir[PATH_MAX];
    size_t len = 0;
    if (env_dir) {
      env_dir += strspn(env_dir, " ");
      len = strlen(env_dir);
      while (len && env_dir[len - 1] == ' ') len--;
    }
    if (len < sizeof dir) snprintf(dir, sizeof dir, "%.*s", (int)len, env_dir ? env_dir : "");
    msi_spill_dir_report(len && len < sizeof dir ? dir : len ? env_dir : NULL);
    setenv("MEMSPACE_RUN_SPILL_CHECKED", pid, 1);
  }
  setenv("MEMSPACE_RUN_PID", pid, 1);
  execvp(argv[i], argv + i);
  fprintf(stderr, "memspace run: cannot run '%s': %s\n", argv[i], strerror(errno));
  return errno == ENOENT ? 127 : 126;
}
