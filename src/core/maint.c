/* SPDX-License-Identifier: MIT */
/* maint.c: one maintenance thread shared by every part (heap purge, spill write-back, frame idle).
   It starts lazily: only when a part says there is work (msi_maint_kick) and the program already runs a second
   thread (msi_maint_note_thread), so a single-threaded program never gets an extra thread (an extra thread
   makes unshare(CLONE_NEWUSER) fail). MEMSPACE_PURGE_DELAY=-1 switches it off. After fork the child has no
   thread; it is started again lazily there. Never call msi_maint_kick while holding an allocator lock:
   pthread_create allocates. While it runs it also watches memory pressure (the cgroup's usage near its limit, the
   machine's memory stall) and then has every part give its caches back at once (internal.h). It sleeps while no
   part has work (maint_sleep): an idle program's thread costs no wake-ups. */
#include "internal.h"
#include "os.h"
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_TASKS 8
MSI_START_BSS static const msi_maint_task_t *tasks[MAX_TASKS];
MSI_START_BSS static _Atomic int task_count;
#define task_lock (msi_fork_page.maint_tasks) /* internal.h: msi_fork_page_t */
MSI_START_BSS static _Atomic int multi_threaded;
/* the thread's state, and the futex word it sleeps on (ASLEEP): a waker turns ASLEEP into RUNNING and wakes it */
enum { M_NONE, M_STARTING, M_RUNNING, M_REFUSED, M_ASLEEP };
MSI_START_BSS static _Atomic int state;
#define forked (msi_fork_page.forked) /* in a forked child, glibc's __libc_single_threaded stays 0: ignore it */
MSI_START_BSS static _Atomic uint64_t next_check; /* rate limit of the /proc check in a forked child */

MSI_STARTUP_TEXT void msi_maint_register(const msi_maint_task_t *task) {
  msi_fork_register(); /* fork.c: the child hook knows a forked child even before the thread ever started */
  MSI_REGISTER_ONCE(tasks, MAX_TASKS, &task_count, &task_lock, task);
}

/* threads of this process from /proc/self/stat (field 20), without allocating; 0 when unreadable.
   *leader_zombie tells whether the main thread has ended (pthread_exit): it then still counts as a thread. */
static long proc_threads_state(bool *leader_zombie) {
  *leader_zombie = false;
  char buf[1024];
  if (msi_os_read_file("/proc/self/stat", buf, sizeof buf) <= 0) return 0;
  const char *p = strrchr(buf, ')'); /* the command name may hold spaces */
  if (!p || !p[1] || !p[2]) return 0;
  *leader_zombie = p[2] == 'Z';
  for (int field = 2; *p && field < 20; p++)
    if (*p == ' ') field++;
  long v = 0;
  while (*p >= '0' && *p <= '9') v = v * 10 + (*p++ - '0');
  return v;
}
long msi_proc_threads(void) {
  bool zombie;
  return proc_threads_state(&zombie);
}

/* true when no thread of the program is left, only this one (and the main thread's zombie) */
/* *uncounted: /proc/self/stat could not be read (a chroot or a container without /proc, a sandbox refusing the
   open). The thread then ends once no thread with a heap is left (each one's exit kicks it), so that a program
   whose main thread ends with pthread_exit still exits. A thread that never allocated may outlive it: the process
   then goes on without the thread (memory is given back on the program's own calls). */
static bool alone(bool *uncounted) {
  bool zombie;
  long n = proc_threads_state(&zombie);
  *uncounted = n <= 0;
  return n == 1 || (n == 2 && zombie);
}

/* in_maint: the maintenance thread; idle_ok: and SCHED_IDLE is reversible; idle_now: it runs under SCHED_IDLE */
static _Thread_local bool in_maint, idle_ok, idle_now;
void msi_maint_yield(void) {
  if (in_maint) msi_os_yield();
}
bool msi_maint_set_idle(bool idle) {
  if (!idle_ok || idle == idle_now) return idle == idle_now;
  if (msi_os_sched_idle(idle) == 0) {
    idle_now = idle;
  } else if (!idle) {
    idle_ok = false; /* cannot come back: never go idle again (stays idle now: false, a caller takes no lock) */
    msi_verbose("maintenance thread: leaving SCHED_IDLE refused (%s)", MSI_ERRNO(errno));
  }
  return idle == idle_now;
}

/* ---- memory pressure (internal.h) ---- */
MSI_START_BSS _Atomic uint32_t msi_maint_pressure, msi_maint_pressure_epoch, msi_maint_tight;
#define PRESSURE_CGROUP_MS 25   /* between looks at the cgroup's usage */
#define PRESSURE_PSI_MS 100     /* between looks at the machine's memory stall */
#define PRESSURE_FIND_MS 1000   /* between reads of the cgroup's limit (a container may be resized) */
#define MAX_HOOKS 4
MSI_START_BSS static const msi_maint_task_t *hooks[MAX_HOOKS];
MSI_START_BSS static _Atomic int hook_count;
MSI_HOT_TEXT void msi_maint_on_pressure(const msi_maint_task_t *release) {
  MSI_REGISTER_ONCE(hooks, MAX_HOOKS, &hook_count, &task_lock, release);
}

void msi_pressure_init(msi_pressure_t *p, uint64_t limit, const char *usage_path, const char *psi_path,
                       const char *meminfo_path) {
  memset(p, 0, sizeof *p);
  p->limit = limit;
  msi_snprintf(p->usage, sizeof p->usage, "%s", usage_path ? usage_path : "");
  msi_snprintf(p->psi, sizeof p->psi, "%s", psi_path ? psi_path : "");
  msi_snprintf(p->meminfo, sizeof p->meminfo, "%s", meminfo_path ? meminfo_path : "");
}

/* The machine's stall is every task's: a task of another cgroup reclaiming at that cgroup's own limit stalls too
   (a test's or a container's, on a machine with gigabytes free), and a program purging all its caches at each such
   look faults its working set in again, over and over, while it lasts (a loop that frees and allocates batches
   gives its spans back and carves them afresh at every batch). So a stall is pressure only while the machine is
   short of memory: MemAvailable below a tenth of MemTotal (the kernel's reclaim then runs for lack of memory,
   not for another cgroup's limit). Read only when the stall passes its mark; an unreadable file leaves the stall
   alone to decide */
#define SHORT_DIV 10
static bool machine_short(const msi_pressure_t *p) {
  char buf[8192];
  uint64_t total, avail;
  if (!p->meminfo[0] || msi_os_read_file(p->meminfo, buf, sizeof buf) <= 0 ||
      !msi_os_text_value(buf, "MemTotal", &total) || !msi_os_text_value(buf, "MemAvailable", &avail))
    return true;
  return avail < total / SHORT_DIV;
}

/* the number after "total=" in a PSI file's first line ("some avg10=0.00 avg60=0.00 avg300=0.00 total=US") */
static bool psi_total(const char *text, uint64_t *v) {
  const char *nl = strchr(text, '\n'), *t = strstr(text, "total=");
  if (!t || (nl && t > nl)) return false;
  return msi_os_parse_dec(t + 6, v);
}

/* The drain: pressure found lasts while the usage keeps falling by DRAIN_STEP or more from one look to the next.
   A release may come while the program is still freeing (its burst half freed): the usage falls below four
   fifths of the limit, and the rest, freed after that look, would wait for the purge delay (the caches' hold up
   to 8 times it) */
#define DRAIN_STEP ((uint64_t)1 << 20)
bool msi_pressure_look(msi_pressure_t *p, uint64_t now_ns, bool psi_due) {
  bool under = false;
  unsigned long long used;
  if (p->limit && p->usage[0] && msi_os_read_ull(p->usage, &used)) {
    under = used >= p->limit - p->limit / 5 || (p->under && used + DRAIN_STEP <= p->used);
    p->used = used;
  }
  char buf[256];
  uint64_t total;
  if (psi_due && p->psi[0] && !(msi_os_read_file(p->psi, buf, sizeof buf) > 0 && psi_total(buf, &total))) {
    p->psi[0] = 0; /* no PSI in this kernel (or not readable here): no more looks */
  } else if (psi_due && p->psi[0]) {
    /* stalled microseconds over elapsed nanoseconds: 1% is 10 us per ms */
    if (p->psi_ns && now_ns > p->psi_ns && total >= p->psi_total &&
        (total - p->psi_total) * 100000 >= now_ns - p->psi_ns)
      under |= machine_short(p);
    p->psi_total = total;
    p->psi_ns = now_ns;
  }
  p->under = under;
  p->tight = under || (p->limit && p->used >= p->limit / 2);
  return under;
}

/* the limit of the cgroup that limits this process and that cgroup's usage file (none: limit 0); cg: the caller's
   scratch (4 KiB paths: static, not on a small stack) */
static void pressure_find(msi_pressure_t *p, msi_os_cgroup_t *cg_out) {
  msi_os_cgroup_t *const cg = cg_out;
  msi_os_cgroup_budget(UINT64_MAX, cg);
  p->limit = 0;
  p->usage[0] = 0;
  if (cg->limit == UINT64_MAX ||
      !msi_os_cgroup_file(cg, cg->version == 1 ? "memory.usage_in_bytes" : "memory.current", p->usage, sizeof p->usage))
    return;
  p->limit = cg->limit;
}

/* one bit of msi_maint_tight set or cleared, written only when it changes */
static void tight_put(uint32_t bit, bool on) {
  if (on == ((atomic_load_explicit(&msi_maint_tight, memory_order_relaxed) & bit) != 0)) return;
  if (on) atomic_fetch_or_explicit(&msi_maint_tight, bit, memory_order_relaxed);
  else atomic_fetch_and_explicit(&msi_maint_tight, ~bit, memory_order_relaxed);
}

/* A look has read the cgroup's limit (once set, until a fork): msi_maint_note_thread sets MSI_TIGHT_UNSEEN only
   before. Both sides store, then load the other's word, in one total order: either the note sees the flag (and
   takes its bit back) or the reading sees the bit (and clears it), so the bit never outlives the first reading */
MSI_START_BSS static _Atomic int limit_read;
/* the limit read: MSI_TIGHT_LIMIT says whether there is one, MSI_TIGHT_UNSEEN goes (written only when changed) */
static void limit_seen(bool limited) {
  if (!atomic_load_explicit(&limit_read, memory_order_relaxed)) atomic_store(&limit_read, 1);
  uint32_t t = atomic_load(&msi_maint_tight); /* (seq_cst after limit_read's store: msi_maint_note_thread) */
  tight_put(MSI_TIGHT_LIMIT, limited);
  if (t & MSI_TIGHT_UNSEEN) atomic_fetch_and(&msi_maint_tight, ~MSI_TIGHT_UNSEEN);
}

/* one look: under pressure, every release task runs now */
static void pressure_run(msi_pressure_t *p, msi_os_cgroup_t *cg, uint64_t now, uint64_t *next_find, uint64_t *next_psi) {
  if (now >= *next_find) {
    *next_find = now + PRESSURE_FIND_MS * 1000000ull;
    pressure_find(p, cg);
    limit_seen(p->limit != 0);
  }
  bool psi_due = now >= *next_psi;
  if (psi_due) *next_psi = now + PRESSURE_PSI_MS * 1000000ull;
  bool under = msi_pressure_look(p, now, psi_due);
  tight_put(MSI_TIGHT_LOOK, p->tight);
  if (under != (atomic_load_explicit(&msi_maint_pressure, memory_order_relaxed) != 0)) {
    atomic_store_explicit(&msi_maint_pressure, under, memory_order_relaxed);
    msi_verbose("memory pressure %s (cgroup usage %llu of its limit %llu, 0: no limit; stall from %s)",
                under ? "begins" : "ends", (unsigned long long)p->used, (unsigned long long)p->limit,
                p->psi[0] ? p->psi : "nowhere");
  }
  if (!under) return;
  atomic_fetch_add_explicit(&msi_maint_pressure_epoch, 1, memory_order_relaxed);
  int n = atomic_load(&hook_count);
  for (int i = 0; i < n; i++) hooks[i]->run(now);
}

/* A process without the maintenance thread (single-threaded, or a forked child before its thread starts) looks
   from the heap's slow paths instead (msi_maint_pressure_poll): at most every PRESSURE_CGROUP_MS, one caller at a
   time, the cgroup only (the machine's stall is left to the maintenance thread: a look that found some other
   program's stall would make this one purge on every look, in its own thread). Never under a seccomp filter: a
   sandbox that forbids open() may kill the process for it (it cannot be lifted: the looks end for good). */
MSI_COLD_BSS static msi_pressure_t poll_state; /* (4 KiB: kept off the pages the first malloc touches) */
MSI_COLD_BSS static msi_os_cgroup_t poll_cg;
MSI_START_BSS static uint64_t poll_next_find;
static uint64_t poll_next_psi = UINT64_MAX;
MSI_START_BSS static _Atomic uint64_t poll_next;
MSI_START_BSS static _Atomic int poll_busy;
bool msi_maint_pressure_poll(uint64_t now) {
  if (now < atomic_load_explicit(&poll_next, memory_order_relaxed) || msi_maint_running()) return false;
  if (atomic_exchange_explicit(&poll_busy, 1, memory_order_acquire)) return false;
  bool sandboxed = msi_os_seccomp_filtered();
  atomic_store_explicit(&poll_next, sandboxed ? UINT64_MAX : now + PRESSURE_CGROUP_MS * 1000000ull, memory_order_relaxed);
  if (sandboxed) {
    msi_verbose("memory pressure: no looks at the cgroup from this single-threaded process (a seccomp filter)");
    atomic_store_explicit(&poll_busy, 0, memory_order_release);
    return false;
  }
  uint32_t epoch = atomic_load_explicit(&msi_maint_pressure_epoch, memory_order_relaxed);
  pressure_run(&poll_state, &poll_cg, now, &poll_next_find, &poll_next_psi);
  atomic_store_explicit(&poll_busy, 0, memory_order_release);
  return atomic_load_explicit(&msi_maint_pressure_epoch, memory_order_relaxed) != epoch;
}

/* ---- sleeping while there is no work ----
   The thread sleeps when no task and no release task is busy (internal.h). A part publishes its work, then
   reads `state` (msi_maint_wake: a relaxed load behind a compiler barrier); the thread stores ASLEEP, then makes
   every running thread of the process pass a full barrier (membarrier) and asks busy() again. So either the
   part's load comes after the store and sees ASLEEP (it wakes the thread), or its work was visible to the second
   busy() (the thread does not sleep): no wake-up is lost, and the waking side pays no fence. Without membarrier
   (Linux before 4.14, or refused) the sleep is bounded instead (UNFENCED_MS): a wake-up lost in that window
   delays the work by at most that long. */
#define UNFENCED_MS 1000
static bool task_busy(const msi_maint_task_t *t) { return !t->busy || t->busy(); }

/* the next round's period in ms while some task has work (the pressure looks count while a release task has
   something for them and there is a cgroup limit or a stall to look at); false: nothing to do. all: as if every
   task had work (the idle rounds before a sleep) */
static bool plan(const msi_pressure_t *p, unsigned *period, bool all) {
  unsigned per = UINT32_MAX;
  int n = atomic_load(&task_count);
  for (int i = 0; i < n; i++)
    if ((all || task_busy(tasks[i])) && tasks[i]->period_ms < per) per = tasks[i]->period_ms ? tasks[i]->period_ms : 1000;
  if (p->limit || p->psi[0]) {
    int h = atomic_load(&hook_count);
    for (int i = 0; i < h; i++) {
      if (!all && !task_busy(hooks[i])) continue;
      unsigned look = p->limit ? PRESSURE_CGROUP_MS : PRESSURE_PSI_MS;
      if (look < per) per = look;
      break;
    }
  }
  if (per == UINT32_MAX) return false;
  *period = per < 10 ? 10 : per > 1000 ? 1000 : per;
  return true;
}
static bool any_busy(const msi_pressure_t *p) {
  unsigned period;
  return plan(p, &period, false);
}
/* Rounds without work before a sleep, at the periods the tasks would have: a program whose caches empty and fill
   again all the time (a span cached and taken back, each cache wakes the thread) would otherwise have it fall
   asleep and be woken at every turn, each sleep a membarrier (an IPI to each CPU running the program) and each
   wake-up a system call in the program's thread; so it sleeps at most once per IDLE_ROUNDS rounds. */
#define IDLE_ROUNDS 8

static void wake_slow(void) {
  int s = M_ASLEEP;
  if (atomic_compare_exchange_strong(&state, &s, M_RUNNING)) msi_os_futex_wake(&state, 1);
}
MSI_HOT_TEXT void msi_maint_wake(void) {
  atomic_signal_fence(memory_order_seq_cst); /* after the work's stores (see above) */
  if (MSI_UNLIKELY(atomic_load_explicit(&state, memory_order_relaxed) == M_ASLEEP)) wake_slow();
}

static unsigned alone_wait(unsigned *interval);
/* Sleeps until a part wakes the thread, or at most as long as alone_wait allows (0: no limit). Sleeps 10 ms when
   the thread is not published as running yet (its starter stores RUNNING after pthread_create), and not at all
   when work came meanwhile. The bound is read after ASLEEP is published and fenced, like busy(): a thread exit
   whose kick found the thread RUNNING has already taken its heap off the count, so the sleep gets a bound.
   True: woken (or work found), false: the time ran out */
static bool maint_sleep(const msi_pressure_t *p, unsigned *alone_interval) {
  int s = M_RUNNING;
  if (!atomic_compare_exchange_strong(&state, &s, M_ASLEEP)) {
    msi_os_sleep_ms(10);
    return false;
  }
  /* (no membarrier under a seccomp filter: a sandbox may kill the process for a call it does not know) */
  bool fenced = !msi_os_seccomp_filtered() && msi_os_membarrier() == 0, work = any_busy(p);
  unsigned ms = work ? 0 : alone_wait(alone_interval);
  if (!work) {
    if (!fenced && (!ms || ms > UNFENCED_MS)) ms = UNFENCED_MS;
    msi_os_futex_wait_ms(&state, M_ASLEEP, ms);
  }
  s = M_ASLEEP;
  return !atomic_compare_exchange_strong(&state, &s, M_RUNNING) || work; /* (failed: a waker did it) */
}

/* The maintenance thread must never keep a process alive: when the program's last thread has ended with
   pthread_exit, this thread is the only one left and ends too, so the process exits (status 0) as it would
   without memspace. Awake, it checks every ALONE_MS. Asleep, it needs no check while every other thread of the
   process has a heap (and one is left): each one's exit kicks it (thread_heap.c's thread-exit destructor), and it then checks again at
   growing intervals (ALONE_FIRST_MS doubling up to ALONE_MAX_MS) until the exiting thread has gone, the count
   of threads again that of heaps. A thread without a heap (it never allocated) keeps those intervals going: its
   exit is seen within ALONE_MAX_MS. */
#define ALONE_MS 100
#define ALONE_FIRST_MS 10
#define ALONE_MAX_MS 1000
#define ALONE_NOW 1 /* ms */
/* how long the thread may sleep (internal.h): 0 (no limit) when every other thread of the process has a heap;
   ALONE_NOW when no other thread is left (the caller looks at once); else the next interval */
unsigned msi_maint_alone_wait(long threads, bool leader_zombie, uint64_t heaps_live, unsigned *interval) {
  long others = threads - 1 - (leader_zombie ? 1 : 0);
  if (threads > 0 && others <= 0) return ALONE_NOW;
  if (threads > 0 && others <= (long)heaps_live) {
    *interval = ALONE_FIRST_MS;
    return 0;
  }
  unsigned w = *interval;
  *interval = w * 2 > ALONE_MAX_MS ? ALONE_MAX_MS : w * 2;
  return w;
}
static unsigned alone_wait(unsigned *interval) {
  bool zombie;
  long n = proc_threads_state(&zombie);
  return msi_maint_alone_wait(n, zombie, msi_heap_threads_live(), interval);
}

static void *maint_main(void *arg) {
  (void)arg;
  /* SCHED_BATCH: background work never preempts the thread a wake-up interrupts (with a kernel without preemption
     a write-back call would hold an interactive process off its CPU); SCHED_IDLE only where reversible */
  in_maint = true;
  msi_os_reads_watch(); /* no file read once a sandbox filters this thread too (linux.c) */
  idle_ok = msi_os_sched_batch() && msi_os_sched_idle_reversible();
#ifdef __GLIBC__
  pthread_setname_np(pthread_self(), "memspace-maint"); /* named once its policy is set: never seen otherwise */
#endif
  uint64_t last[MAX_TASKS] = {0};
  uint64_t next_alone_check = 0, next_find = 0, next_psi = 0;
  unsigned alone_interval = ALONE_FIRST_MS, idle_rounds = 0;
  msi_pressure_t pressure;
  MSI_COLD_BSS static msi_os_cgroup_t cg; /* the maintenance thread's */
  msi_pressure_init(&pressure, 0, NULL, "/proc/pressure/memory", "/proc/meminfo");
  /* the first look now: the cgroup's limit found, the looks come every PRESSURE_CGROUP_MS from the start (found at
     the first round's end, they would wait a PSI period, 100 ms: a program that grows past half its limit and
     frees a burst meanwhile would never see it tight, and the emptied current spans of a thread then idle would
     stay with it, where no pressure pass reaches them) */
  if (msi_opt(MS_OPTION_PURGE_DELAY) >= 0) pressure_run(&pressure, &cg, msi_now_ns(), &next_find, &next_psi);
  for (;;) {
    unsigned period;
    bool slept = false, on = msi_opt(MS_OPTION_PURGE_DELAY) >= 0;
    if (on && plan(&pressure, &period, false)) {
      idle_rounds = 0;
      msi_os_sleep_ms(period);
    } else if (on && idle_rounds < IDLE_ROUNDS && plan(&pressure, &period, true)) {
      idle_rounds++;
      msi_os_sleep_ms(period);
    } else {
      if (maint_sleep(&pressure, &alone_interval)) idle_rounds = 0; /* (a timeout: asleep again) */
      slept = true;
    }
    uint64_t t = msi_now_ns();
    if (slept || t >= next_alone_check) {
      next_alone_check = t + ALONE_MS * 1000000ull;
      bool uncounted;
      if (alone(&uncounted)) return NULL; /* the last thread: the process ends with it */
      if (uncounted && msi_heap_threads_live() == 0) {
        atomic_store(&state, M_REFUSED); /* (not started again: /proc stays unreadable) */
        msi_verbose("maintenance thread ended: no thread with a heap is left and /proc/self/stat is unreadable");
        return NULL;
      }
    }
    if (msi_opt(MS_OPTION_PURGE_DELAY) < 0) continue;
    uint64_t now = msi_now_ns();
    pressure_run(&pressure, &cg, now, &next_find, &next_psi);
    int n = atomic_load(&task_count);
    for (int i = 0; i < n; i++) { /* a task without work counts as run: the tasks keep their phase with the looks */
      if (now - last[i] < (uint64_t)tasks[i]->period_ms * 1000000ull) continue;
      last[i] = now;
      if (task_busy(tasks[i])) tasks[i]->run(now);
    }
  }
  return NULL;
}

/* writes only what changes (each page written after fork is a copy): the fork page, and this file's state only
   when the thread had started */
/* fork.c's hook (part 8 of the lock order: task_lock is a leaf). The child has no maintenance thread: it starts
   again lazily. In a forked child glibc's __libc_single_threaded keeps the parent's value: `forked` says so. */
MSI_COLD void msi_fork_maint(msi_fork_phase_t phase, bool locking) {
  if (phase == MSI_FORK_PREPARE) {
    if (locking) msi_lock(&task_lock);
  } else if (phase == MSI_FORK_PARENT) {
    if (locking) msi_unlock(&task_lock);
  } else {
    if (atomic_load(&state)) atomic_store(&state, 0);
    if (atomic_load(&multi_threaded)) atomic_store(&multi_threaded, 0);
    /* else __libc_single_threaded is right in the child too. When it is not, second_thread asks /proc on the
       allocation paths: the reads watch starts now, so that a filter the child installs later (a sandboxed
       worker) is seen before an open() it may kill the process for (one prctl, in the child of a threaded
       program only; a watch the parent started is the child's already) */
    if (!msi_single_threaded()) {
      atomic_store(&forked, 1);
      msi_os_reads_watch();
    }
    if (atomic_load(&next_check)) atomic_store(&next_check, 0);
    if (atomic_load(&msi_maint_pressure)) atomic_store(&msi_maint_pressure, 0); /* until the child's own look */
    /* the child is in its parent's cgroup: a limit the parent read stays known until the child's own first look
       reads it again; what the parent's looks found of its memory, and its threads yet to be seen, stay behind */
    uint32_t tight = atomic_load(&msi_maint_tight);
    if (tight & ~MSI_TIGHT_LIMIT) atomic_store(&msi_maint_tight, tight & MSI_TIGHT_LIMIT);
    if (atomic_load(&limit_read)) atomic_store(&limit_read, 0);
    if (atomic_load(&poll_busy)) atomic_store(&poll_busy, 0); /* a look another thread of the parent was taking */
    msi_lock_reset(&task_lock);
  }
}

/* Until a look has read the cgroup's limit, a second thread's heap takes the process for limited
   (MSI_TIGHT_UNSEEN): the spans its frees empty are set aside where a forced purge can take them, whenever the
   maintenance thread's first look comes (it may come after a burst was freed by a thread that then idles) */
void msi_maint_note_thread(void) {
  if (!atomic_load_explicit(&multi_threaded, memory_order_relaxed)) atomic_store(&multi_threaded, 1);
  if (atomic_load_explicit(&limit_read, memory_order_relaxed) ||
      (atomic_load_explicit(&msi_maint_tight, memory_order_relaxed) & MSI_TIGHT_UNSEEN) ||
      msi_opt(MS_OPTION_PURGE_DELAY) < 0)
    return;
  atomic_fetch_or(&msi_maint_tight, MSI_TIGHT_UNSEEN);
  if (atomic_load(&limit_read)) atomic_fetch_and(&msi_maint_tight, ~MSI_TIGHT_UNSEEN); /* (limit_read above) */
}

MSI_HOT_TEXT bool msi_maint_running(void) {
  int s = atomic_load(&state);
  return s == M_RUNNING || s == M_ASLEEP;
}

/* a second thread exists: told by a part (msi_maint_note_thread) or, with glibc >= 2.32, seen directly */
MSI_HOT_TEXT static bool second_thread(void) {
  if (atomic_load_explicit(&multi_threaded, memory_order_relaxed)) return true;
  bool multi = false;
  if (atomic_load_explicit(&forked, memory_order_relaxed)) {
    uint64_t now = msi_now_ns();
    if (now < atomic_load_explicit(&next_check, memory_order_relaxed)) return false;
    atomic_store_explicit(&next_check, now + 100000000ull, memory_order_relaxed);
    multi = msi_proc_threads() > 1;
  } else {
    multi = !msi_single_threaded();
  }
  if (multi) atomic_store(&multi_threaded, 1);
  return multi;
}

MSI_HOT_TEXT void msi_maint_kick(void) {
  atomic_signal_fence(memory_order_seq_cst); /* after the work's stores (maint_sleep) */
  int s = atomic_load_explicit(&state, memory_order_relaxed);
  if (MSI_LIKELY(s == M_RUNNING)) return;
  if (s == M_ASLEEP) {
    wake_slow();
    return;
  }
  if (s != M_NONE) return;
  if (!second_thread()) return;
  if (msi_opt(MS_OPTION_PURGE_DELAY) < 0) return;
  int expected = 0;
  if (!atomic_compare_exchange_strong(&state, &expected, M_STARTING)) return;
  msi_fork_register();
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  /* a small stack; programs with large static TLS (R) need more: then retry with the default size */
  pthread_attr_setstacksize(&attr, 256 * 1024);
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old); /* the thread inherits a mask that blocks every signal */
  pthread_t t;
  int r = pthread_create(&t, &attr, maint_main, NULL);
  if (r == EINVAL) {
    pthread_attr_destroy(&attr);
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    r = pthread_create(&t, &attr, maint_main, NULL);
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  pthread_attr_destroy(&attr);
  if (r == 0) {
    atomic_store(&state, M_RUNNING);
    msi_verbose("maintenance thread started");
  } else {
    msi_verbose("maintenance thread not started (%s); memory is returned on the next allocation", MSI_ERRNO(r));
    atomic_store(&state, M_REFUSED); /* do not retry on every call */
  }
}
