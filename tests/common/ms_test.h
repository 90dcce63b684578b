/* ms_test.h: small helpers shared by the tests (include path tests/common, set by ms_unit_test). */
#ifndef MS_TEST_H
#define MS_TEST_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

/* resident bytes of this process, from /proc/self/statm; 0 when unreadable */
static inline size_t ms_test_rss_bytes(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  unsigned long pages = 0, res = 0;
  if (f) {
    if (fscanf(f, "%lu %lu", &pages, &res) != 2) res = 0;
    fclose(f);
  }
  return res * (size_t)sysconf(_SC_PAGESIZE);
}

/* mappings of this process (lines of /proc/self/maps); -1 when unreadable */
static inline int ms_test_mapping_count(void) {
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f) return -1;
  int n = 0, c;
  while ((c = getc(f)) != EOF) n += c == '\n';
  fclose(f);
  return n;
}

/* whether the mapping holding p carries the VmFlags flag `flag` ("rr", "hg": /proc/self/smaps): 1 or 0, -1 when
   unreadable */
static inline int ms_test_vm_flag(const void *p, const char *flag) {
  FILE *f = fopen("/proc/self/smaps", "r");
  if (!f) return -1;
  char line[512];
  int in = 0, has = 0;
  while (fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
      in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
    } else if (in && !strncmp(line, "VmFlags:", 8)) {
      for (char *t = strtok(line + 8, " \n"); t; t = strtok(NULL, " \n")) has |= !strcmp(t, flag);
      break;
    }
  }
  fclose(f);
  return has;
}

/* the kernel's KernelPageSize in bytes of the mapping holding p (/proc/self/smaps): 2 MiB or 1 GiB for hugetlb
   memory; 0 when p is not mapped or smaps is unreadable */
static inline size_t ms_test_kernel_page_size(const void *p) {
  FILE *f = fopen("/proc/self/smaps", "r");
  if (!f) return 0;
  char line[512];
  int in = 0;
  size_t kb = 0;
  while (fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
      in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
    else if (in && sscanf(line, "KernelPageSize: %zu kB", &kb) == 1)
      break;
  }
  fclose(f);
  return in ? kb * 1024 : 0;
}

/* a sandbox from here on (seccomp, as Tor's sandbox or systemd's SystemCallFilter=): open() and openat() answer
   with `action` (SECCOMP_RET_KILL_PROCESS, or SECCOMP_RET_ERRNO | EPERM); 0, or -1 when refused (skip) */
static inline int ms_test_forbid_open(unsigned action) {
  struct sock_filter f[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_openat, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, action),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_open, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, action),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
  struct sock_fprog prog = {sizeof f / sizeof f[0], f};
  return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) ? -1 : 0;
}
#endif
