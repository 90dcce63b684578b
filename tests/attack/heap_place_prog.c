/* heap_place_prog: prints the address of the process's first small block (attack_heap_place runs it many times:
   the addresses must differ as ASLR's do, not take one of a few hundred values) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  void *p = malloc(32);
  printf("%lx\n", (unsigned long)(uintptr_t)p);
  free(p);
  return p ? 0 : 1;
}
