/* startup_prog none|one|faults|entry: a program that allocates nothing, or makes one malloc and one free
   (test_startup.sh); faults: the same malloc and free, printing the minor page faults they took (the heap's
   start-up: its first segment, its own variables); entry: the minor page faults taken before main (the dynamic
   loader and the constructors) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static long minflt(void) {
  struct rusage ru;
  return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_minflt : -1;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "none";
  if (strcmp(mode, "entry") == 0) { /* the minor faults of the start-up, to main's first line */
    printf("%ld\n", minflt());
    return 0;
  }
  if (strcmp(mode, "one") == 0 || strcmp(mode, "faults") == 0) {
    long before = minflt();
    char *volatile p = malloc(100);
    if (!p) return 1;
    free(p);
    long after = minflt();
    if (strcmp(mode, "faults") == 0) printf("%ld\n", after - before);
  }
  return 0;
}
