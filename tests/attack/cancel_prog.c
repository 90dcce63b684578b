/* cancel_prog: a thread with a pending pthread_cancel request (deferred cancellation) allocates and frees blocks
   of 1-20 MiB. malloc and free are no cancellation points: the thread must run to its end. Cancelled inside them
   (a file call of spill, a message's write), it would leave a lock held, and the next large malloc of another
   thread wait forever. Exit 1 when the thread was cancelled; "ok" after main allocates the same sizes again.
   With the argument `fork`, a child forked after a first block lives while the thread runs: spill's frees then look
   for the child's hang-up (a poll under spill's lock) before each free. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_barrier_t bar;

static void *worker(void *arg) {
  (void)arg;
  pthread_barrier_wait(&bar); /* not a cancellation point; the request is pending from here on */
  for (size_t i = 1; i <= 20; i++) {
    char *p = malloc(i << 20);
    if (p) p[0] = 1;
    free(p);
  }
  return NULL;
}

int main(int argc, char **argv) {
  int hold[2] = {-1, -1};
  char *first = NULL;
  if (argc > 1 && strcmp(argv[1], "fork") == 0) { /* a child that holds the first block until main is done */
    first = malloc(1 << 20);
    if (!first || pipe(hold) != 0) return 2;
    memset(first, 7, 1 << 20);
    pid_t pid = fork();
    if (pid < 0) return 2;
    if (pid == 0) {
      char b;
      close(hold[1]);
      alarm(100);
      while (read(hold[0], &b, 1) > 0) {}
      _exit(first[4096] == 7 ? 0 : 1);
    }
    close(hold[0]);
  }
  pthread_barrier_init(&bar, NULL, 2);
  pthread_t t;
  if (pthread_create(&t, NULL, worker, NULL)) return 2;
  pthread_cancel(t);
  pthread_barrier_wait(&bar);
  void *r;
  pthread_join(t, &r);
  if (hold[1] >= 0) close(hold[1]); /* the child ends */
  if (r == PTHREAD_CANCELED) {
    puts("FAIL: the thread was cancelled inside malloc or free (a cancellation point in the allocator)");
    fflush(stdout);
    _exit(1); /* (no exit handlers: a lock the thread left held would make them wait) */
  }
  free(first);
  for (size_t i = 1; i <= 20; i++) {
    char *p = malloc(i << 20);
    if (!p) return 2;
    memset(p, 1, 4096);
    free(p);
  }
  puts("ok");
  return 0;
}
