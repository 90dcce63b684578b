/* Run under LD_PRELOAD by the death and preload tests: misuses the allocator in the way named by argv[1]. Prints
   the pointer it is about to misuse, so the test can check the message names it. Not linked with memspace. */
#include <dlfcn.h>
#include <memspace.h>
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
  if (!strcmp(mode, "space_block") || !strcmp(mode, "space_block_realloc")) {
    /* a block of an ms_space_create space given to free or realloc (the library's calls found by name) */
    ms_space_config_t config = {.initial_size = 1 << 20, .numa_node = -1, .name = "rt-space"};
    ms_space_t *(*create)(const ms_space_config_t *) = (ms_space_t * (*)(const ms_space_config_t *))
        dlsym(RTLD_DEFAULT, "ms_space_create");
    void *(*space_malloc)(ms_space_t *, size_t) = (void *(*)(ms_space_t *, size_t))dlsym(RTLD_DEFAULT, "ms_space_malloc");
    ms_space_t *space = create && space_malloc ? create(&config) : NULL;
    if (!space) return 2;
    char *first = space_malloc(space, 100), *second = space_malloc(space, 100);
    char *p = !strcmp(mode, "space_block") ? first : second;
    printf("%p\n", (void *)p);
    fflush(stdout);
    if (!strcmp(mode, "space_block")) free(p);
    else p = realloc(p, 300);
    return p != NULL;
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
