/* SPDX-License-Identifier: MIT */
/* space_internal.h: what space.c shares with proc_space.c (never installed). */
#ifndef MSI_SPACE_INTERNAL_H
#define MSI_SPACE_INTERNAL_H
#include "internal.h"

/* The reserved data range of a space: [*lo, *lo + *span). Every block the space ever hands out (expansions
   included) lies inside it, so ownership is one range check. */
void msi_space_range(const ms_space_t *space, uintptr_t *lo, size_t *span);
/* Bytes of data range a space reserves for `initial` and `expand` (room for expansions). */
size_t msi_space_reserve_size(size_t initial, size_t expand);
/* 0 when a space of `bytes` committed bytes (locked: without swap) can be backed by the machine's RAM and swap
   and the cgroup's memory limit (read once per process, without allocating); else ENOMEM and `why` names the
   limit ("more than the machine's N bytes of RAM + swap"). */
int msi_space_backing(size_t bytes, bool locked, char *why, size_t cap);
/* The process space (proc_space.c), or NULL when there is none (yet). */
ms_space_t *msi_proc_space_get(void);
#endif
