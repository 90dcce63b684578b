/* SPDX-License-Identifier: MIT */
/* init.c: library start-up and exit. Safe before libc is fully up: reads options from environ only. */
#include "internal.h"
#include "route.h"

_Atomic int msi_initialized;

int ms_version(void) { return MEMSPACE_VERSION_MAJOR * 10000 + MEMSPACE_VERSION_MINOR * 100 + MEMSPACE_VERSION_PATCH; }

void msi_init(void) {
  if (MSI_LIKELY(atomic_load_explicit(&msi_initialized, memory_order_acquire))) return;
  msi_options_init();
  msi_route_init();
  atomic_store_explicit(&msi_initialized, 1, memory_order_release);
}

__attribute__((constructor(101))) static void msi_constructor(void) { msi_init(); }

__attribute__((destructor(101))) static void msi_destructor(void) {
  if (msi_opt(MS_OPTION_SHOW_STATS)) ms_stats_print(NULL, NULL, 0); /* never set in the tool (options.c) */
}
