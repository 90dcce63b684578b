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
/* The largest expand step a space of `initial_size` bytes can ever take, as given (page-rounded inside): its room
   for expansions with the largest step (64 GiB, less near the largest space; 0 for a size no space can have).
   ms_space_create refuses a larger step (EINVAL). */
size_t msi_space_expand_max(size_t initial_size);
/* 0 when a space of `bytes` committed bytes (locked: without swap) can be backed by the machine's RAM and swap
   and the cgroup's memory limit (read once per process, without allocating); else ENOMEM and `why` names the
   limit ("more than the machine's N bytes of RAM + swap"). */
int msi_space_backing(size_t bytes, bool locked, char *why, size_t cap);
/* Marks the process space: a lock refused later (an expansion, a first-allocation commit) leaves that memory and
   every later region unlocked, said once, instead of failing the allocation (proc_space.c, after creation). */
void msi_space_lock_optional(ms_space_t *space);
/* The process space (proc_space.c), or NULL when there is none (yet). */
ms_space_t *msi_proc_space_get(void);
#endif
