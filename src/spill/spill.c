/* SPDX-License-Identifier: MIT */
/* spill.c: placeholder until the spill part lands: spill is never active. */
#include "route.h"
#include <errno.h>
size_t msi_spill_threshold(void) { return 0; }
void *msi_spill_malloc(size_t size, size_t alignment, bool zero) { (void)size, (void)alignment, (void)zero; errno = 0; return NULL; }
bool msi_spill_owns(const void *p) { (void)p; return false; }
void msi_spill_free(void *p) { (void)p; }
size_t msi_spill_usable_size(const void *p) { (void)p; return 0; }
void *msi_spill_realloc(void *p, size_t size) { (void)p, (void)size; errno = ENOMEM; return NULL; }
void *ms_spill_alloc(size_t size) { (void)size; errno = ENOSYS; return NULL; }
void ms_spill_free(void *ptr) { (void)ptr; }
int ms_spill_is(const void *ptr) { (void)ptr; return 0; }
