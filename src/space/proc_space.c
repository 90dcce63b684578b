/* SPDX-License-Identifier: MIT */
/* proc_space.c: placeholder until the spaces part lands: no process space. */
#include "route.h"
#include <errno.h>
bool msi_proc_space_owns(const void *p) { (void)p; return false; }
void *msi_proc_space_malloc(size_t size, size_t alignment, bool zero) { (void)size, (void)alignment, (void)zero; errno = ENOMEM; return NULL; }
void msi_proc_space_free(void *p) { (void)p; }
size_t msi_proc_space_usable_size(const void *p) { (void)p; return 0; }
void *msi_proc_space_realloc(void *p, size_t size) { (void)p, (void)size; errno = ENOMEM; return NULL; }
