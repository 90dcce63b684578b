/* cancel_prog: a thread with a pending pthread_cancel request (deferred cancellation) allocates and frees blocks
   of 1-20 MiB. malloc and free are no cancellation points: the thread must run to its end. Cancelled inside them
   (a file call of spill, a message's write), it would leave a lock held, and the next large malloc of another
   thread wait forever. Exit 1 when the thread was cancelled; "ok" after main allocates the same sizes again. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int main(void) {
  pthread_barrier_init(&bar, NULL, 2);
  pthread_t t;
  if (pthread_create(&t, NULL, worker, NULL)) return 2;
  pthread_cancel(t);
  pthread_barrier_wait(&bar);
  void *r;
  pthread_join(t, &r);
  if (r == PTHREAD_CANCELED) {
    puts("FAIL: the thread was cancelled inside malloc or free (a cancellation point in the allocator)");
    return 1;
  }
  for (size_t i = 1; i <= 20; i++) {
    char *p = malloc(i << 20);
    if (!p) return 2;
    memset(p, 1, 4096);
    free(p);
  }
  puts("ok");
  return 0;
}
