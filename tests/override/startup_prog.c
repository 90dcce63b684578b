/* startup_prog none|one: a program that allocates nothing, or makes one malloc and one free (test_startup.sh) */
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "one") == 0) {
    char *volatile p = malloc(100);
    if (!p) return 1;
    free(p);
  }
  return 0;
}
