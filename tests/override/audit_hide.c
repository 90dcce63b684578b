/* An LD_AUDIT library for the foreign-pointer tests: hides the symbols named in MS_AUDIT_HIDE (comma-separated)
   from dlsym and from lazy binding, as a C library without them would (glibc before 2.33 has no mallinfo2), and
   says at exit how many lookups it hid: "audit: hid N lookups of NAME" per name. Loaded by the dynamic linker in
   its own namespace: it uses its own copy of the C library, never memspace. */
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NAMES 4
static char names[MAX_NAMES][32];
static unsigned hidden[MAX_NAMES], count;
#define AUDIT_API __attribute__((visibility("default"))) /* the build hides symbols by default */

AUDIT_API unsigned la_version(unsigned version) {
  (void)version;
  const char *list = getenv("MS_AUDIT_HIDE");
  while (list && *list && count < MAX_NAMES) {
    size_t n = strcspn(list, ",");
    if (n && n < sizeof names[0]) memcpy(names[count++], list, n);
    list += n + (list[n] == ',');
  }
  return LAV_CURRENT;
}

AUDIT_API unsigned la_objopen(struct link_map *map, Lmid_t lmid, uintptr_t *cookie) {
  (void)map, (void)lmid, (void)cookie;
  return LA_FLG_BINDTO | LA_FLG_BINDFROM;
}

AUDIT_API uintptr_t la_symbind64(Elf64_Sym *sym, unsigned ndx, uintptr_t *refcook, uintptr_t *defcook, unsigned *flags,
                       const char *symname) {
  (void)ndx, (void)refcook, (void)defcook, (void)flags;
  for (unsigned i = 0; i < count; i++)
    if (!strcmp(symname, names[i])) {
      hidden[i]++;
      return 0;
    }
  return sym->st_value;
}

__attribute__((destructor)) static void report(void) {
  for (unsigned i = 0; i < count; i++) fprintf(stderr, "audit: hid %u lookups of %s\n", hidden[i], names[i]);
}
