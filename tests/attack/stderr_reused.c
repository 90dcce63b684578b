/* stderr_reused: closes stderr, opens a data file of its own, which becomes descriptor 2 (the lowest free one), writes
   to it, then frees a pointer inside a large block: memspace's message (free(): invalid pointer) must not land in
   the file when it is close-on-exec (cloexec); one opened without O_CLOEXEC (rdwr, wronly) cannot be told from a
   standard error put in place by a shell or dup2 and gets it. argv[1]: the file; argv[2]: cloexec, rdwr or wronly.
   Exit: the abort's signal; 2: the file is not descriptor 2. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  int flags = strcmp(argv[2], "rdwr") == 0      ? O_RDWR
              : strcmp(argv[2], "cloexec") == 0 ? O_WRONLY | O_CLOEXEC
                                                : O_WRONLY;
  close(2);
  if (open(argv[1], flags | O_CREAT | O_TRUNC, 0644) != 2) return 2;
  if (write(2, "data\n", 5) != 5) return 2;
  static volatile size_t offset = 4096;
  char *p = malloc(200000);
  free(p + offset);
  return 0;
}
