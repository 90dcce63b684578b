/* stderr_reused: a daemon that closed its standard descriptors without reopening them, then opened its data file,
   which took descriptor 2. A memspace message during the run (a reported double free in a space, which the program
   goes on after; a spill directory refused at the first spilled block) must not land in that file: exit 1 when the
   file holds anything but the program's two records. Argument: the data file's path. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "memspace.h"

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  close(0), close(1), close(2);
  if (open("/dev/null", O_RDONLY) != 0 || open("/dev/null", O_WRONLY) != 1) return 2;
  int data = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0600);
  if (data != 2) return 2;
  if (write(data, "RECORD1\n", 8) != 8) return 2;
  ms_space_config_t c = {0};
  c.initial_size = 1 << 20;
  c.numa_node = -1;
  ms_space_t *s = ms_space_create(&c);
  if (!s) return 2;
  void *p = ms_space_malloc(s, 64);
  ms_space_free(s, p);
  ms_space_free(s, p); /* reported and ignored (not a secure build's fatal check: MEMSPACE_SECURE unset) */
  ms_space_destroy(s);
  char *big = malloc(4 << 20); /* spilled when the test asks for it: its directory refused, a warning */
  if (big) memset(big, 1, 4 << 20);
  free(big);
  if (write(data, "RECORD2\n", 8) != 8) return 2;
  char buf[256];
  ssize_t n = pread(data, buf, sizeof buf - 1, 0);
  if (n < 0) return 2;
  buf[n] = 0;
  if (strcmp(buf, "RECORD1\nRECORD2\n") != 0) {
    int tty = open("/dev/tty", O_WRONLY); /* (nothing else is left to say it on: the test checks the status) */
    if (tty >= 0) dprintf(tty, "stderr_reused: the data file holds: %s\n", buf);
    return 1;
  }
  return 0;
}
