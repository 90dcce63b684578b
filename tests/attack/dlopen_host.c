/* dlopen_host LIB: loads libmemspace.so with dlopen after start-up (as Python's ctypes does) and uses its ms_*
   API; the C library keeps serving malloc. That copy reads its options (it is not an inert second copy) */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) { fprintf(stderr, "dlopen: %s\n", dlerror()); return 1; }
  void *(*ms_malloc)(size_t) = (void *(*)(size_t))dlsym(h, "ms_malloc");
  void (*ms_free)(void *) = (void (*)(void *))dlsym(h, "ms_free");
  if (!ms_malloc || !ms_free) return 1;
  void *p = ms_malloc(100);
  printf("%s\n", p ? "allocated" : "failed");
  ms_free(p);
  return p ? 0 : 1;
}
