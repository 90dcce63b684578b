/* A copy of the library loaded with dlopen (Python's ctypes, a plugin) into a program that the C library's malloc
   serves: its ms_* calls on the C library's blocks reach the C library's functions (ms_usable_size gives the
   block's size, ms_realloc moves it with its contents, ms_free frees it). The copy recognises the C library's
   free, realloc and malloc_usable_size as not its own by address, never by the process's winning definition,
   which here is the C library's. Usage: dlopen_copy LIBMEMSPACE.so; exit 0 when every check holds. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(c)                                                       \
  do {                                                                 \
    if (!(c)) { fprintf(stderr, "FAIL: %s (line %d)\n", #c, __LINE__); return 1; } \
  } while (0)

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) { fprintf(stderr, "dlopen: %s\n", dlerror()); return 2; }
  size_t (*usable)(const void *) = (size_t (*)(const void *))dlsym(h, "ms_usable_size");
  void *(*re)(void *, size_t) = (void *(*)(void *, size_t))dlsym(h, "ms_realloc");
  void (*fr)(void *) = (void (*)(void *))dlsym(h, "ms_free");
  int (*ours)(const void *) = (int (*)(const void *))dlsym(h, "ms_is_ours");
  CHECK(usable && re && fr && ours);
  char *p = malloc(100);
  CHECK(p && !ours(p));
  strcpy(p, "from the C library");
  CHECK(usable(p) >= 100);
  char *q = re(p, 5000);
  CHECK(q != NULL);
  CHECK(strcmp(q, "from the C library") == 0);
  fr(q);
  for (int i = 0; i < 100; i++) fr(malloc(16 + (size_t)i * 100));
  puts("ok");
  return 0;
}
