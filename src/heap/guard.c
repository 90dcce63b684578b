/* SPDX-License-Identifier: MIT */
/* guard.c: the secure build's guard pages: whether the kernel's guard markers work here, a guard installed after a
   span or a segment header, and removed when the page becomes ordinary memory again. */
#include "heap_internal.h"

/* whether guard markers work here (secure build; msi_heap_g.guard_markers): probed once at start-up on a fresh
   page. Refused (EINVAL): a kernel before 6.13, or memory locked by an mlockall(MCL_FUTURE) made before. */
MSI_STARTUP_TEXT bool msi_heap_guard_probe(void) {
  void *p = msi_os_mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return false;
  bool ok = msi_os_madvise(p, 4096, MADV_GUARD_INSTALL) == 0;
  msi_os_munmap(p, 4096);
  return ok;
}

/* a guard marker refused on locked pages (mlock, mlockall): reported once, for spans and large blocks alike */
void msi_heap_guard_refused(void) {
  MSI_WARN_ONCE("heap (secure build): guard markers refused on locked memory (mlock, mlockall): spans and blocks "
                "of 64 KiB-1 MiB made from now on go without a guard page");
}

#if MSI_HEAP_SECURE
/* a guard page at addr: MADV_GUARD_INSTALL marks the page so that any access faults, without a new mapping (the
   segment stays one VMA). mprotect would split the segment's mapping in three per span, past the kernel's limit
   of ~65,530 mappings in a few GiB of heap, so without markers there is no guard in segments (reported once at
   start-up). true: installed. Refused on locked pages (mlock, mlockall): that span goes without a guard. */
MSI_HOT_TEXT bool msi_heap_guard_install(uintptr_t addr) {
  if (!msi_heap_g.guard_markers) return false;
  int saved = errno; /* a refusal is not the caller's failure: malloc succeeds with errno as it was */
  if (msi_os_madvise((void *)addr, MSI_HEAP_GUARD, MADV_GUARD_INSTALL) == 0) return true;
  if (errno == EINVAL) msi_heap_guard_refused();
  errno = saved;
  return false; /* (or an injected fault) */
}
/* the page becomes ordinary memory again (a span of another length may put blocks there). Never skipped for a
   span that got its guard: a guard left behind would sit inside the next span's blocks. false: the guard may
   still be there (every way refused, the fresh mapping too: the mapping limit, or a kernel that unmapped the page
   first, a hole), reported once; the caller keeps the page's chunk out of use */
bool msi_heap_guard_remove(uintptr_t addr) {
  int saved = errno; /* (free leaves errno alone) */
  bool ok = false;
  for (int i = 0; i < 3 && !ok; i++) ok = msi_os_madvise((void *)addr, MSI_HEAP_GUARD, MADV_GUARD_REMOVE) == 0;
  /* still refused: a fresh mapping over the page drops any guard (and merges back into the segment's mapping) */
  if (!ok)
    ok = msi_os_mmap((void *)addr, MSI_HEAP_GUARD, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
                     0) == (void *)addr;
  if (!ok)
    MSI_WARN_ONCE("heap (secure build): a span's guard page could not be removed (%s): its 64 KiB chunk is left "
                  "unused", MSI_ERRNO(errno));
  errno = saved;
  return ok;
}

#endif
