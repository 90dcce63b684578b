/* SPDX-License-Identifier: MIT */
/* run.c: `memspace run [options] -- PROGRAM ARGS...`: exec the program with the library preloaded (absolute
   path appended to any LD_PRELOAD) and the matching MEMSPACE_* variables. Exit status is the program's. */
#include "bench.h"
#include "memspace.h"
#include "tool.h"
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

/* Finds `prog` on PATH like execvp does; returns 0 and the path, or -1. */
static int resolve(const char *prog, char *out, size_t cap) {
  if (strchr(prog, '/')) { snprintf(out, cap, "%s", prog); return access(out, X_OK); }
  const char *path = getenv("PATH");
  if (!path) path = "/usr/bin:/bin";
  while (*path) {
    const char *colon = strchr(path, ':');
    size_t len = colon ? (size_t)(colon - path) : strlen(path);
    snprintf(out, cap, "%.*s/%s", (int)len, path, prog);
    if (access(out, X_OK) == 0) return 0;
    path += len + (colon ? 1 : 0);
  }
  return -1;
}

/* Why the dynamic loader would ignore LD_PRELOAD for this program, or NULL. */
static const char *preload_ignored(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0) return NULL;
  if (st.st_mode & (S_ISUID | S_ISGID)) return "it is setuid/setgid (secure-execution mode ignores LD_PRELOAD)";
  if (getxattr(path, "security.capability", NULL, 0) > 0) return "it has file capabilities (secure-execution mode)";
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
    fprintf(stderr, "memspace run: %s: '%s' is not a size (bytes, or a number with K, M or G)\n", opt, value);
    return -1;
  }
  return 0;
}

int tool_run(int argc, char **argv) {
  int i = 1;
  bool spill_dir_given = false;
  for (; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--") == 0) { i++; break; }
    if (strcmp(a, "--heap") == 0) {
      if (!v || (strcmp(v, "unlimited") && strcmp(v, "performance") && strcmp(v, "size") && strcmp(v, "none"))) {
        fprintf(stderr, "memspace run: --heap takes unlimited, performance, size or none\n");
        return 2;
      }
      setenv("MEMSPACE_CACHE", v, 1), i++;
    } else if (strcmp(a, "--space-initial") == 0) {
      if (need_size(a, v)) return 2;
      setenv("MEMSPACE_SPACE_INITIAL", v, 1), i++;
    } else if (strcmp(a, "--space-expand") == 0) {
      if (need_size(a, v)) return 2;
      setenv("MEMSPACE_SPACE_EXPAND", v, 1), i++;
    } else if (strcmp(a, "--space-at") == 0) {
      if (!v || (strcmp(v, "start") && strcmp(v, "firstalloc"))) {
        fprintf(stderr, "memspace run: --space-at takes start or firstalloc\n");
        return 2;
      }
      setenv("MEMSPACE_SPACE_AT", v, 1), i++;
    } else if (strcmp(a, "--spill-threshold") == 0) {
      if (need_size(a, v)) return 2;
      setenv("MEMSPACE_SPILL_THRESHOLD", v, 1), i++;
    } else if (strcmp(a, "--spill-dir") == 0) {
      if (!v) { fprintf(stderr, "memspace run: --spill-dir needs a directory\n"); return 2; }
      char abs[PATH_MAX];
      setenv("MEMSPACE_SPILL_DIR", realpath(v, abs) ? abs : v, 1), i++;
      spill_dir_given = true;
    } else if (strcmp(a, "--inherit") == 0) {
      setenv("MEMSPACE_SPACE_INHERIT", "1", 1);
    } else if (strcmp(a, "--stats") == 0) {
      setenv("MEMSPACE_SHOW_STATS", "1", 1);
    } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      printf("usage: memspace run [OPTIONS] [--] PROGRAM ARGS...   (PROGRAM runs with libmemspace preloaded)\n"
             "  --heap unlimited|performance|size|none   cache preset (MEMSPACE_CACHE)\n"
             "  --space-initial SIZE --space-expand SIZE --space-at start|firstalloc   serve the program from a process\n"
             "                                           space (MEMSPACE_SPACE_*; expand 0 = fixed size)\n"
             "  --inherit                                children get the same space settings\n"
             "  --spill-threshold SIZE [--spill-dir DIR] back blocks of SIZE and more with files (MEMSPACE_SPILL_*)\n"
             "  --stats                                  print statistics at exit (MEMSPACE_SHOW_STATS=1)\n"
             "  SIZE: bytes, or a number with K, M or G. See docs/options.md.\n");
      return 0;
    } else if (a[0] == '-') {
      fprintf(stderr, "memspace run: unknown option '%s'\n", a);
      return 2;
    } else {
      break; /* the program, without "--" */
    }
  }
  if (i >= argc) { fprintf(stderr, "memspace run: no program given (memspace run [options] -- PROGRAM ARGS...)\n"); return 2; }
  const char *thr = getenv("MEMSPACE_SPILL_THRESHOLD");
  if (spill_dir_given && (!thr || !*thr || strcmp(thr, "0") == 0))
    fprintf(stderr, "memspace run: a spill directory without a spill threshold (--spill-threshold SIZE): nothing "
                    "is spilled\n");
  const char *lib = msb_memspace_lib();
  char abs[PATH_MAX];
  if (!realpath(lib, abs)) {
    fprintf(stderr, "memspace run: cannot find the library %s: %s (run make first)\n", lib, strerror(errno));
    return 127;
  }
  const char *old = getenv("LD_PRELOAD");
  if (old && *old && !strstr(old, abs)) {
    size_t n = strlen(old) + strlen(abs) + 2;
    char *joined = malloc(n);
    if (!joined) return 127;
    snprintf(joined, n, "%s:%s", old, abs);
    setenv("LD_PRELOAD", joined, 1);
  } else if (!old || !*old) {
    setenv("LD_PRELOAD", abs, 1);
  }
  char path[PATH_MAX];
  /* MEMSPACE_VERBOSE parsed as the library parses it (1/true/yes/on), not just "set and not 0" */
  if (ms_option_get(MS_OPTION_VERBOSE) == 1 && resolve(argv[i], path, sizeof path) == 0) {
    const char *why = preload_ignored(path);
    if (why) fprintf(stderr, "memspace: %s will not use memspace: %s\n", path, why);
  }
  execvp(argv[i], argv + i);
  fprintf(stderr, "memspace run: cannot run '%s': %s\n", argv[i], strerror(errno));
  return errno == ENOENT ? 127 : 126;
}
