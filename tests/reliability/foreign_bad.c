/* foreign_bad: free or realloc of a pointer that is neither memspace's nor the C library's block, and that glibc's
   free would fault on without a word (it reads a chunk header in the 16 bytes before the pointer): memspace must
   report it, one message naming the pointer and SIGABRT (tests/reliability/expect_outcome.sh checks it).
   Usage: foreign_bad low|hole|misaligned|protnone|readonly|forged [realloc|usable] (usable: malloc_usable_size
   answers 0, exit 3 otherwise). low: (void *)0x1000; hole: 16 bytes into a
   page just unmapped; misaligned: 8 bytes into a mapped page; protnone: 16 bytes into PROT_NONE memory (a
   reservation's unused part: glibc's free faults reading its header); readonly: the second page of a read-only
   mapping (glibc's free reads a zero header and aborts with its own message, naming nothing); forged: a pointer
   into the program's own memory after a forged glibc header that marks it mapped on its own, with a prev_size
   that makes glibc's free unmap a page of a live memspace block (exit 10 when that page was taken: the next mmap
   would hand it to someone else). Prints "pointer 0x..." on stderr first. */
#include <stdint.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char **argv) {
  alarm(60);
  const char *how = argc > 1 ? argv[1] : "low";
  char *p = (char *)0x1000, *victim = NULL;
  uintptr_t page = 0;
  if (strcmp(how, "low") != 0) {
    char *m = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return perror("mmap"), 2;
    if (!strcmp(how, "hole")) {
      munmap(m, 8192);
      p = m + 16;
    } else if (!strcmp(how, "forged")) {
      victim = malloc(1 << 20);
      if (!victim) return 2;
      memset(victim, 'v', 1 << 20);
      page = ((uintptr_t)victim + 4095) & ~(uintptr_t)4095;
      p = m + 4096 + 16; /* its offset in the page a power of two, as glibc's munmap_chunk wants */
      size_t *h = (size_t *)(p - 16), prev = (uintptr_t)h - page; /* h - prev = page, modulo 2^64 */
      h[0] = prev;
      h[1] = ((4096 - prev) & ~(size_t)7) | 2; /* IS_MMAPPED; prev + size = one page */
    } else if (!strcmp(how, "protnone") || !strcmp(how, "readonly")) {
      if (mprotect(m, 8192, !strcmp(how, "protnone") ? PROT_NONE : PROT_READ) != 0) return perror("mprotect"), 2;
      p = !strcmp(how, "protnone") ? m + 16 : m + 4096;
    } else {
      p = m + 8;
    }
  }
  fprintf(stderr, "pointer %p\n", (void *)p);
  if (argc > 2 && !strcmp(argv[2], "usable")) { /* no block: 0 (glibc's would fault, or read a forged size) */
    size_t n = malloc_usable_size(p);
    printf("usable size %zu\n", n);
    return n == 0 ? 0 : 3;
  } else if (argc > 2 && !strcmp(argv[2], "realloc")) {
    void *q = realloc(p, 100);
    printf("realloc returned %p\n", q);
  } else {
    free(p);
  }
  if (victim) {
    void *t = mmap((void *)page, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (t == (void *)page) return fprintf(stderr, "a live block's page was unmapped and taken by a new mapping\n"), 10;
  }
  printf("no report\n");
  return 0;
}
