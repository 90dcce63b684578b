/* A plugin loaded with dlopen under the preloaded library: loaded plainly, its malloc is memspace's; loaded with
   RTLD_DEEPBIND, its own dependencies come first in its symbol look-up, and the C library's malloc and free serve
   it (docs/linking.md: what every preloaded allocator meets there). Its blocks then reach memspace's free as the C
   library's (foreign) ones, which memspace hands back to the C library. Usage: deepbind_prog MODULE plain|deep,
   run with LD_PRELOAD of the library; exit 0 when the plugin's blocks are served as said, 77 without the
   preloaded library. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  int (*ours)(const void *) = (int (*)(const void *))dlsym(RTLD_DEFAULT, "ms_is_ours");
  if (!ours) { puts("SKIP: the library is not preloaded"); return 77; }
  int deep = strcmp(argv[2], "deep") == 0;
  void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL | (deep ? RTLD_DEEPBIND : 0));
  if (!h) { fprintf(stderr, "dlopen: %s\n", dlerror()); return 2; }
  char *(*buffer)(void) = (char *(*)(void))dlsym(h, "dlib_buffer");
  if (!buffer || !buffer() || strcmp(buffer(), "allocated in a constructor") != 0) { fputs("FAIL: dlib_buffer\n", stderr); return 1; }
  int served = ours(buffer()); /* the block the plugin's constructor allocated */
  if (served != !deep) {
    fprintf(stderr, "FAIL: the %s plugin's malloc is %s\n", argv[2], served ? "memspace's" : "the C library's");
    return 1;
  }
  char *(*dup)(const char *) = (char *(*)(const char *))dlsym(h, "dlib_strdup");
  char *s = dup ? dup("from the plugin") : NULL;
  if (!s || ours(s) != !deep) { fputs("FAIL: dlib_strdup\n", stderr); return 1; }
  free(s); /* the program's free (memspace's) takes either: a C library block goes back to the C library */
  dlclose(h);
  printf("ok: %s plugin served by %s\n", argv[2], served ? "memspace" : "the C library");
  return 0;
}
