/* SPDX-License-Identifier: MIT */
/* route.c: which modes are active (see route.h). */
#include "route.h"

_Atomic unsigned msi_route_mask;

void msi_route_init(void) {
  unsigned mask = 0;
  if (msi_opt(MS_OPTION_SPILL_THRESHOLD) > 0) mask |= MSI_ROUTE_SPILL;
  if (msi_opt(MS_OPTION_SPACE_INITIAL) > 0) mask |= MSI_ROUTE_SPACE;
  atomic_store_explicit(&msi_route_mask, mask, memory_order_relaxed);
}
