/* A C program (no libstdc++ at start-up) that loads a C++ module with dlopen, RTLD_LOCAL (argv[2] "local": as
   Python loads extension modules) or RTLD_GLOBAL (argv[2] "global"), and runs its out-of-memory cases
   (cxx_dlopen_ext.cc). Prints one line per case, "NAME 0" when the module saw what the C++ standard promises;
   exits 0 when every case did. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  void *h = dlopen(argv[1], RTLD_NOW | (strcmp(argv[2], "global") == 0 ? RTLD_GLOBAL : RTLD_LOCAL));
  if (!h) {
    printf("dlopen: %s\n", dlerror());
    return 2;
  }
  int (*throwing)(int) = (int (*)(int))dlsym(h, "cxx_throwing");
  int (*nothrow)(int, int) = (int (*)(int, int))dlsym(h, "cxx_nothrow");
  int (*works)(void) = (int (*)(void))dlsym(h, "cxx_works");
  if (!throwing || !nothrow || !works) return 2;
  int bad = 0, r;
  for (int aligned = 0; aligned < 2; aligned++) {
    printf("throwing%s %d\n", aligned ? "_aligned" : "", r = throwing(aligned));
    fflush(stdout);
    bad |= r;
    for (int th = 0; th < 2; th++) {
      printf("nothrow%s%s %d\n", aligned ? "_aligned" : "", th ? "_throwing_handler" : "", r = nothrow(aligned, th));
      fflush(stdout);
      bad |= r;
    }
  }
  printf("works %d\n", r = works());
  bad |= r;
  return bad != 0;
}
