/* SPDX-License-Identifier: MIT */
/* init.c: library start-up and exit. Safe before libc is fully up: reads options from environ only. */
#include "internal.h"
#include "os.h"
#include "route.h"
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <string.h>

MSI_START_DATA _Atomic int msi_initialized;

int ms_version(void) { return MEMSPACE_VERSION_MAJOR * 10000 + MEMSPACE_VERSION_MINOR * 100 + MEMSPACE_VERSION_PATCH; }

/* an allocation came before the C library set environ (a preinit_array function): the options are read by the
   constructor, which then applies them as ms_option_set does */
MSI_START_BSS static bool options_deferred;

MSI_STARTUP_TEXT void msi_init(void) { /* (every process runs it: with the constructors) */
  if (MSI_LIKELY(atomic_load_explicit(&msi_initialized, memory_order_acquire))) return;
  msi_options_init();
  msi_route_init();
  if (!msi_options_read()) { options_deferred = true; return; } /* (one thread: before the C library's start) */
  atomic_store_explicit(&msi_initialized, 1, memory_order_release);
}

/* MEMSPACE_SHOW_STATS: a copy of stderr taken at start-up, for programs that close stderr before exiting
   (coreutils' close_stdout: `sort`, `md5sum` printed no statistics) */
static int stats_fd = -1;

/* MEMSPACE_VERBOSE=1: one line at start shows that memspace serves this process, and with which options */
static void announce(void) {
  if (!msi_opt(MS_OPTION_VERBOSE) || MSI_TOOL_PROCESS) return;
  if (msi_malloc_elsewhere()) { msi_malloc_elsewhere_note(); return; } /* an inert copy (route.h) */
  char opts[512];
  msi_options_describe(opts, sizeof opts);
  msi_verbose("%d.%d.%d active in %s (pid %d):%s", MEMSPACE_VERSION_MAJOR, MEMSPACE_VERSION_MINOR,
              MEMSPACE_VERSION_PATCH, program_invocation_short_name, msi_os_getpid(), opts);
}

MSI_STARTUP_TEXT __attribute__((constructor(101))) static void msi_constructor(void) {
  msi_options_environ_final();
  msi_init();
  if (options_deferred) { /* the heap was set up with the defaults: the preset and the checks as given now */
    options_deferred = false;
    msi_option_changed(MS_OPTION_CACHE);
    msi_option_changed(MS_OPTION_SECURE);
  }
  msi_fork_register(); /* fork.c */
  if (msi_opt(MS_OPTION_SHOW_STATS)) stats_fd = msi_os_stderr_copy();
  announce();
}

MSI_STARTUP_TEXT __attribute__((destructor(101))) static void msi_destructor(void) {
  if (!msi_opt(MS_OPTION_SHOW_STATS)) return; /* never set in the tool (options.c) */
  /* stderr, or its copy once it is closed or a file of the program's (msg.c; no copy: -1, only a stats file) */
  msi_stats_exit_print(msi_os_fd_open(2) && !msi_os_fd_cloexec(2) ? 2 : stats_fd);
}
