/* stack_free: free or realloc of an address on the calling thread's stack (issue #25), in the main thread and in
   another thread. Without memspace, glibc's free reads a chunk header from the bytes before the pointer, whatever
   the stack holds: here a planted one (a size with glibc's "not the main arena" bit) sends it to an address 64
   MiB-aligned below the stack, and it faults without a word. memspace must report it: one message naming the
   pointer, SIGABRT (tests/reliability/expect_outcome.sh checks it).
   Usage: stack_free free|realloc|thread. Prints "pointer 0x..." on stderr first. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *how;

static __attribute__((noinline)) void misuse(void) {
  _Alignas(16) volatile uintptr_t buf[8];
  for (int i = 0; i < 8; i++) buf[i] = 0;
  buf[3] = 0x20 | 0x4; /* the "size" word before buf + 4: 32 bytes, not the main arena */
  void *p = (void *)&buf[4];
  fprintf(stderr, "pointer %p\n", p);
  if (!strcmp(how, "realloc")) {
    void *q = realloc(p, 100);
    printf("realloc returned %p\n", q);
  } else {
    free(p);
  }
  buf[0] = buf[3]; /* keeps the frame alive until after the call */
}

static void *thread_main(void *arg) {
  (void)arg;
  misuse();
  return NULL;
}

int main(int argc, char **argv) {
  alarm(60);
  how = argc > 1 ? argv[1] : "free";
  if (!strcmp(how, "thread")) {
    pthread_t t;
    pthread_create(&t, NULL, thread_main, NULL);
    pthread_join(t, NULL);
  } else {
    misuse();
  }
  printf("no report\n");
  return 0;
}
