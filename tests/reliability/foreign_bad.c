/* foreign_bad: free or realloc of a pointer that is neither memspace's nor the C library's block, and that glibc's
   free would fault on without a word (it reads a chunk header in the 16 bytes before the pointer): memspace must
   report it, one message naming the pointer and SIGABRT (tests/reliability/expect_outcome.sh checks it).
   Usage: foreign_bad low|hole|misaligned|protnone|readonly [realloc]. low: (void *)0x1000; hole: 16 bytes into a
   page just unmapped; misaligned: 8 bytes into a mapped page; protnone: 16 bytes into PROT_NONE memory (a
   reservation's unused part: glibc's free faults reading its header); readonly: the second page of a read-only
   mapping (glibc's free reads a zero header and aborts with its own message, naming nothing). Prints
   "pointer 0x..." on stderr first. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char **argv) {
  alarm(60);
  const char *how = argc > 1 ? argv[1] : "low";
  char *p = (char *)0x1000;
  if (strcmp(how, "low") != 0) {
    char *m = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return perror("mmap"), 2;
    if (!strcmp(how, "hole")) {
      munmap(m, 8192);
      p = m + 16;
    } else if (!strcmp(how, "protnone") || !strcmp(how, "readonly")) {
      if (mprotect(m, 8192, !strcmp(how, "protnone") ? PROT_NONE : PROT_READ) != 0) return perror("mprotect"), 2;
      p = !strcmp(how, "protnone") ? m + 16 : m + 4096;
    } else {
      p = m + 8;
    }
  }
  fprintf(stderr, "pointer %p\n", (void *)p);
  if (argc > 2 && !strcmp(argv[2], "realloc")) {
    void *q = realloc(p, 100);
    printf("realloc returned %p\n", q);
  } else {
    free(p);
  }
  printf("no report\n");
  return 0;
}
