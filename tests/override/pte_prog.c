/* pte_prog none|alloc: the page-table pages a short program holds (test_pte.sh). none allocates nothing; alloc
   makes a few small blocks and one block of each large size a short program uses (64 KiB-1 MiB: a pipe buffer,
   sort's buffers), writing each. Both then map one page anywhere and write it (a later mapping of the program:
   the locale archive, a dlopen()ed library), and print VmPTE (KiB) of /proc/self/status. No stdio: its buffer
   would be a malloc in `none`. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static char buf[8192];

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "none";
  if (strcmp(mode, "alloc") == 0) {
    static const size_t sizes[] = {16, 100, 1000, 3000, 40000, 100000, 200000, 400000, 800000};
    for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
      char *volatile p = malloc(sizes[i]);
      if (!p) return 1;
      p[0] = 1; /* kept: the blocks are live at the end, as a program's buffers are */
    }
  }
  char *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return 1;
  m[0] = 1;
  int fd = open("/proc/self/status", O_RDONLY);
  ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
  if (n <= 0) return 1;
  buf[n] = 0;
  char *v = strstr(buf, "VmPTE:");
  if (!v) return 1;
  v += 6;
  v += strspn(v, " \t");
  size_t len = strspn(v, "0123456789");
  v[len] = '\n';
  return write(1, v, len + 1) == (ssize_t)(len + 1) ? 0 : 1;
}
