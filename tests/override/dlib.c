/* A library that allocates in its constructor and frees in its destructor (dlopen/dlclose tests). */
#include <stdlib.h>
#include <string.h>
static char *buffer;
static void *more[100];
__attribute__((constructor)) static void dlib_init(void) {
  buffer = malloc(64);
  strcpy(buffer, "allocated in a constructor");
  for (int i = 0; i < 100; i++) more[i] = calloc(1, 100 + i * 1000);
}
__attribute__((destructor)) static void dlib_fini(void) {
  for (int i = 0; i < 100; i++) free(more[i]);
  free(buffer);
}
__attribute__((visibility("default"))) char *dlib_buffer(void) { return buffer; }
/* a block of the plugin's malloc, given to the caller to free */
__attribute__((visibility("default"))) char *dlib_strdup(const char *s) {
  char *d = malloc(strlen(s) + 1);
  if (d) strcpy(d, s);
  return d;
}
