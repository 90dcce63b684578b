/* malloc_address_prog: built without PIE, it takes malloc's address, so the program's own PLT entry stands for
   malloc everywhere (an undefined symbol with a value, as in python3): memspace preloaded still serves malloc */
#include <stdio.h>
#include <stdlib.h>

void *(*volatile alloc_fn)(size_t);

int main(void) {
  alloc_fn = malloc; /* an absolute address in the code (no PIE): the linker makes the PLT entry canonical */
  void *p = alloc_fn(100);
  printf("%s\n", p ? "allocated" : "failed");
  free(p);
  return p ? 0 : 1;
}
