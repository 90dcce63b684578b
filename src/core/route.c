/* SPDX-License-Identifier: MIT */
/* route.c: which modes are active (see route.h), and options changed at run time applied to the parts. */
#include "route.h"

_Atomic unsigned msi_route_mask;

void msi_route_init(void) {
  unsigned mask = 0;
  if (msi_opt(MS_OPTION_SPILL_THRESHOLD) > 0) mask |= MSI_ROUTE_SPILL;
  if (msi_opt(MS_OPTION_SPACE_INITIAL) > 0) mask |= MSI_ROUTE_SPACE;
  atomic_store_explicit(&msi_route_mask, mask, memory_order_relaxed);
}

void msi_option_changed(ms_option_t o) {
  switch (o) {
  case MS_OPTION_SPILL_THRESHOLD:
  case MS_OPTION_SPACE_INITIAL: msi_route_init(); break;
  case MS_OPTION_CACHE:
  case MS_OPTION_SECURE: msi_heap_options_changed(); break;
  default: break; /* read where they are used: on each call, or when a space, frame or buffer is created */
  }
}
