/* preinit_prog: allocates from a preinit_array function, which runs before the C library's initialiser has set
   environ: memspace (preloaded, or linked in) still reads its MEMSPACE_* variables (taken as all defaults, they
   would give no statistics at exit, no process space, the variables ignored without a word) */
#include <stdio.h>
#include <stdlib.h>

static void *early_block;
static void early(int argc, char **argv, char **envp) {
  (void)argc, (void)argv, (void)envp;
  early_block = malloc(100);
}
__attribute__((section(".preinit_array"), used)) static void (*const preinit)(int, char **, char **) = early;

int main(void) {
  void *p = malloc(1000);
  printf("%s\n", early_block && p ? "allocated" : "failed");
  free(p);
  free(early_block);
  return early_block && p ? 0 : 1;
}
