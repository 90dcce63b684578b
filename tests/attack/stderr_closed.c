/* stderr_closed: closes standard error before exiting, as coreutils' close_stdout does (sort, md5sum, echo) */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(void) {
  free(malloc(100));
  puts("closing stderr");
  fflush(stdout);
  close(2);
  return 0;
}
