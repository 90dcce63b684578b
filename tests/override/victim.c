/* Run under LD_PRELOAD by the death and preload tests: misuses the allocator in the way named by argv[1]. Prints
   the pointer it is about to misuse, so the test can check the message names it. Not linked with memspace. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  if (!strcmp(mode, "double_free") || !strcmp(mode, "double_free_large") || !strcmp(mode, "double_free_remote")) {
    char *p = malloc(!strcmp(mode, "double_free_large") ? 1000000 : 100);
    printf("%p\n", (void *)p);
    fflush(stdout);
    free(p);
    free(p);
    return 0;
  }
  if (!strcmp(mode, "invalid_pointer") || !strcmp(mode, "invalid_large")) {
    char *p = malloc(!strcmp(mode, "invalid_large") ? 1000000 : 100);
    printf("%p\n", (void *)(p + 32));
    fflush(stdout);
    free(p + 32);
    return 0;
  }
  if (!strcmp(mode, "foreign")) {
    /* memory from the C library's own malloc, freed through the replaced free: no complaint */
    void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
    void *(*glibc_malloc)(size_t) = libc ? (void *(*)(size_t))dlsym(libc, "malloc") : NULL;
    if (!glibc_malloc) return 2;
    for (int i = 0; i < 1000; i++) {
      char *p = glibc_malloc(10 + i * 13);
      memset(p, 1, 10);
      if (i % 2) free(p);
      else free(realloc(p, 20 + i));
    }
    puts("foreign ok");
    return 0;
  }
  return 2;
}
