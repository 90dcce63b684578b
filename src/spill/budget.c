/* SPDX-License-Identifier: MIT */
/* budget.c: the memory budget (the cgroup's limit, else RAM) and samples of its dirty and anonymous bytes */
#include "spill_internal.h"

sp_budget_t msi_spill_budget;

/* ---- memory budget and write-back ----
   The budget is the smallest of RAM and the memory limits of our cgroup and its ancestors (v1
   memory.limit_in_bytes; v2 memory.max and memory.high). `stat_path` is the memory.stat of the cgroup holding
   that limit (hierarchical: its other members count too), or "" for /proc/meminfo when no cgroup limits us
   below RAM. Every tick (maintenance task, 50 ms, or an allocation at most every 50 ms) samples its dirty and
   anonymous bytes and decides:
   - the spilled data fits (spilled bytes + anonymous memory <= 3/4 of the budget): no write-back. Rewritten
     pages stay dirty and cost no fault, fresh blocks fault in large folios (advise_range), as plain memory
     does in huge pages. Only when dirty and anonymous bytes together pass 3/4 of the budget (other processes of the
     cgroup spilling as well) is every region written back, so that reclaim never meets only dirty pages (with
     cgroup v1 it cannot write them back itself, and would OOM-kill);
   - the data does not fit: dirty spilled pages are kept under budget/8 (above: write-back of every region), and
     otherwise the next 1/16 of each region is written back round-robin, so no page stays dirty longer than about
     a second and reclaim finds clean pages instead of stalling. */

uint64_t msi_sp_fit_bytes(void) { return bud.cg.limit / 4 * 3; }

/* Dirty and anonymous bytes of the budget's cgroup (or of the machine), kept in bud; a failed read (busy,
   unreadable) keeps the previous values. */
void msi_sp_sample(uint64_t *dirty, uint64_t *anon) {
  static char buf[8192];
  uint64_t d, a;
  if (msi_trylock(&msi_sp_buf_lock)) {
    bool cg = bud.cg.stat_path[0] != 0; /* else /proc/meminfo: kB */
    bool ok = msi_os_read_file(cg ? bud.cg.stat_path : "/proc/meminfo", buf, sizeof buf) > 0 &&
              (cg ? msi_os_text_value(buf, bud.cg.dirty_key, &d) && msi_os_text_value(buf, bud.cg.anon_key, &a)
                  : msi_os_text_kb(buf, bud.cg.dirty_key, &d) && msi_os_text_kb(buf, bud.cg.anon_key, &a));
    msi_unlock(&msi_sp_buf_lock);
    if (ok) {
      atomic_store_explicit(&bud.dirty, d, memory_order_relaxed);
      atomic_store_explicit(&bud.anon, a, memory_order_relaxed);
    }
  }
  *dirty = atomic_load_explicit(&bud.dirty, memory_order_relaxed);
  *anon = atomic_load_explicit(&bud.anon, memory_order_relaxed);
}

/* the cgroup's headroom runs out: dirty and anonymous bytes, which reclaim cannot free at once, past 3/4, and
   the dirty bytes a quarter of what the anonymous ones leave for the page cache. (Auto keeps the program's RAM
   blocks at 3/4 of the budget by design: anonymous bytes alone would make every pass urgent, at normal priority
   beside interactive processes, while write-behind keeps the dirty bytes at a few blocks. Below 2/3 of the
   budget in anonymous bytes the second condition follows from the first.) */
bool msi_sp_headroom_low(uint64_t dirty, uint64_t anon) {
  uint64_t cache = bud.cg.limit > anon ? bud.cg.limit - anon : 0;
  return dirty + anon >= msi_sp_fit_bytes() && dirty >= cache / 4;
}

/* the budget's cgroup and limit, found once (auto needs it before spill starts; the two share it), at any
   thread's first candidate block: a fork child resets the lock (msi_sp_auto_fork_child) */
static msi_lock_t find_lock = MSI_LOCK_INIT;
void msi_sp_budget_find(void) {
  msi_sp_mark_used();
  static _Atomic int found;
  if (atomic_load_explicit(&found, memory_order_acquire)) return;
  msi_lock(&find_lock);
  if (!atomic_load(&found)) {
    uint64_t ram;
    if (!msi_os_meminfo("MemTotal", &ram)) ram = UINT64_MAX;
    msi_os_cgroup_budget(ram, &bud.cg);
    atomic_store_explicit(&found, 1, memory_order_release);
  }
  msi_unlock(&find_lock);
}

void msi_sp_budget_init(void) {
  msi_sp_budget_find();
  uint64_t limit = bud.cg.limit;
  bud.dirty_cap = limit / 8 > (8ull << 20) ? limit / 8 : (8ull << 20);
  uint64_t dirty, anon;
  msi_sp_sample(&dirty, &anon);
  msi_verbose("spill: memory budget %llu MiB (%s); write-back starts once spilled data and anonymous memory pass "
              "%llu MiB, then dirty spilled pages are kept under %llu MiB",
              (unsigned long long)(limit >> 20), bud.cg.stat_path[0] ? bud.cg.stat_path : "RAM",
              (unsigned long long)(msi_sp_fit_bytes() >> 20), (unsigned long long)(bud.dirty_cap >> 20));
}

uint64_t msi_sp_snapshot_cap(void) { return bud.cg.limit / 16; }

/* ---- auto: MEMSPACE_SPILL_THRESHOLD=auto ----
   A block of MSI_SPILL_AUTO_MIN bytes or more stays in RAM while the memory budget has headroom and goes to spill
   once it would take the process past the budget (route.c's spill predicate asks msi_spill_auto_wants).
   - What counts: the memory reclaim cannot take at once. Under a cgroup limit: the limiting cgroup's anonymous,
     shmem, dirty and writeback bytes (memory.stat: every member of that cgroup, our own blocks included; clean
     page cache, spilled pages too, is reclaimable and not counted), or its page counter less the clean page
     cache when that is more (msi_sp_auto_read). Its room is the limit minus those. The machine's room is
     MemAvailable + SwapFree (a neighbour filling RAM counts).
   - The headroom kept: both rooms keep a quarter of the budget after the block (the same 3/4 mark as
     write-back, so spilled data keeps the last quarter for its dirty pages and page cache), each plus
     budget * (pressure - 10)% of its own scope's pressure (`some avg10` past the few percent a busy machine
     shows anyway, at most 50%): /proc/pressure/memory against the machine's room, the cgroup's own (v2
     memory.pressure) against the cgroup's (msi_sp_auto_decide).
   - Hysteresis: once spilling, a block comes back to RAM only when room - block >= headroom + budget/8, so a
     program near the mark does not flap between the two.
   - When it is read: never per malloc. The sample (memory.stat, the page counter, meminfo, the pressure files: 3-5
     small files, each opened, read and closed) is taken at a candidate block when the last one is older than
     AUTO_PERIOD_NS and the block is a large one (aut.step: budget/64, at least 4 MiB), the estimate is near the
     mark (msi_sp_auto_stale) or spilling; a small block far from the mark takes one only when the last is older
     than AUTO_FAR_NS. Also on
     the maintenance tick once spill runs, once more to confirm before spilling begins, and at the next candidate
     once the spilled blocks freed since the last sample reach budget/8 (msi_sp_auto_freed). Between samples the
     bytes sent to RAM since the last sample count as used (frees do not: the estimate errs towards spilling, and
     the confirmation corrects it), so a program's own blocks need no sample of their own: what a sample adds is
     the growth of everything else (the program's small blocks, the cgroup's other members, the machine). */
#define AUTO_PERIOD_NS 50000000ull
#define AUTO_FAR_NS 1000000000ull /* at most one sample a second for small blocks far from the mark */
#define AUTO_PRESSURE_FLOOR 10 /* percent of stall a busy machine shows without being short of memory */

typedef struct {
  _Atomic int state;              /* 0 not set up, 1 ready */
  _Atomic int spilling;           /* 1: new candidate blocks go to spill */
  _Atomic uint64_t room, m_room;  /* the cgroup's and the machine's room at the last sample (bytes) */
  _Atomic uint64_t since;         /* bytes sent to RAM since that sample */
  _Atomic uint64_t freed;         /* spilled bytes freed since that sample (msi_sp_auto_freed) */
  _Atomic uint64_t sample_ns;     /* when it was taken (0: take one at the next candidate) */
  _Atomic unsigned pressure, cg_pressure; /* the machine's and the cgroup's some avg10 at the last sample, % */
  _Atomic uint64_t samples, to_spill, to_ram;
  _Atomic uint64_t asked;         /* candidate blocks so far (the maintenance tick samples only after new ones) */
  _Atomic uint64_t began_used, began_room, began_block; /* the first switch to spill: counted bytes, room, the block */
  _Atomic int reason;             /* of the last switch to spill: MSI_SP_AUTO_* */
  _Atomic uint64_t last_used;     /* counted bytes at the last sample */
  uint64_t step;
  bool has_pressure;              /* /proc/pressure/memory was readable at set-up */
  msi_lock_t lock;                /* one sample at a time (trylock: a busy sampler's values serve) */
} sp_auto_t;
static sp_auto_t aut;

static const char *const reason_names[] = {"", "budget", "machine", "pressure"};
const char *msi_sp_auto_reason_name(int r) { return r >= 0 && r < 4 ? reason_names[r] : ""; }

/* "some avg10=1.23 ...": the whole percent (0 when unreadable) */
static unsigned read_pressure(const char *path, char *buf, size_t size) {
  if (!path || msi_os_read_file(path, buf, size) <= 0) return 0;
  const char *p = strstr(buf, "some avg10=");
  if (!p) return 0;
  unsigned v = 0;
  for (p += 11; *p >= '0' && *p <= '9' && v <= 100; p++) v = v * 10 + (unsigned)(*p - '0');
  return v > 100 ? 100 : v;
}

/* Reads one sample from the named files (meminfo and pressure may be NULL or unreadable): the cgroup's counted
   bytes (stat_path of cg, "" for none), MemAvailable + SwapFree, the machine's pressure and the cgroup's own (v2
   memory.pressure beside its memory.stat, when present). Separate for tests.
   The counted bytes are the larger of two readings of the same thing: memory.stat's anonymous, shmem, dirty and
   writeback bytes, and the cgroup's usage counter (v1 memory.usage_in_bytes, v2 memory.current) less
   memory.stat's clean page cache. memory.stat is the kernel's per-CPU statistics, which it folds in lazily: a
   program filling memory fast can be counted hundreds of MiB low for a moment (the page counter, exact, is ahead
   of it), and auto would then keep sending blocks to RAM until the cgroup had almost no page cache left for
   spilled data. The page counter also holds the kernel's own memory charged to the cgroup, which reclaim does not
   free at once either. */
/* Its buffer is static (8 KiB: too much for the stack of a thread in its allocation path): the caller holds
   aut.lock, as auto_refresh does; msi_sp_auto_read takes it for any other caller. */
static void auto_read(const msi_os_cgroup_t *cg, const char *meminfo, const char *pressure, msi_sp_auto_sample_t *s) {
  static char buf[8192];
  s->limit = cg->limit;
  s->used = 0;
  s->avail = UINT64_MAX;
  s->pressure = 0;
  s->cg_pressure = 0;
  s->ok = true;
  if (cg->stat_path[0]) {
    static const char *const v1[] = {"total_rss", "total_shmem", "total_dirty", "total_writeback", "total_cache"};
    static const char *const v2[] = {"anon", "shmem", "file_dirty", "file_writeback", "file"};
    const char *const *keys = cg->version == 1 ? v1 : v2;
    uint64_t v[5] = {0};
    s->ok = msi_os_read_file(cg->stat_path, buf, sizeof buf) > 0;
    for (unsigned i = 0; s->ok && i < 5; i++) {
      if (!msi_os_text_value(buf, keys[i], &v[i]) && i == 0) s->ok = false; /* not a memory.stat */
      if (i < 4) s->used = msi_add_sat(s->used, v[i]); /* (a value past 2^64: the most) */
    }
    char path[sizeof cg->stat_path];
    uint64_t usage;
    msi_os_cgroup_file(cg, cg->version == 1 ? "memory.usage_in_bytes" : "memory.current", path, sizeof path);
    if (s->ok && path[0] && msi_os_read_file(path, buf, sizeof buf) > 0 && msi_os_parse_dec(buf, &usage)) {
      uint64_t clean = v[4] > v[1] + v[2] + v[3] ? v[4] - v[1] - v[2] - v[3] : 0; /* (the cache holds shmem) */
      if (usage > clean && usage - clean > s->used) s->used = usage - clean;
    }
    if (cg->version == 2) {
      msi_os_cgroup_file(cg, "memory.pressure", path, sizeof path);
      if (path[0]) s->cg_pressure = read_pressure(path, buf, sizeof buf);
    }
  }
  uint64_t avail, swap;
  if (meminfo && msi_os_read_file(meminfo, buf, sizeof buf) > 0 && msi_os_text_kb(buf, "MemAvailable:", &avail)) {
    if (!msi_os_text_kb(buf, "SwapFree:", &swap)) swap = 0;
    s->avail = msi_add_sat(avail, swap);
  } else if (msi_os_sysinfo_value("MemAvailable", &avail)) { /* no /proc: sysinfo's lower bound (no page cache) */
    s->avail = avail + (msi_os_sysinfo_value("SwapFree", &swap) ? swap : 0);
  } else if (!cg->stat_path[0]) {
    s->ok = false;
  }
  if (!cg->stat_path[0] && s->avail != UINT64_MAX) s->used = cg->limit > s->avail ? cg->limit - s->avail : 0; /* (for the statistics) */
  s->pressure = read_pressure(pressure, buf, sizeof buf);
}
void msi_sp_auto_read(const msi_os_cgroup_t *cg, const char *meminfo, const char *pressure, msi_sp_auto_sample_t *s) {
  msi_lock(&aut.lock);
  auto_read(cg, meminfo, pressure, s);
  msi_unlock(&aut.lock);
}

/* The room a sample leaves: the cgroup's limit minus its counted bytes (UINT64_MAX without a cgroup limit) */
uint64_t msi_sp_auto_cg_room(const msi_sp_auto_sample_t *s) {
  if (!s->limit || s->limit == UINT64_MAX) return UINT64_MAX;
  return s->limit > s->used ? s->limit - s->used : 0;
}
/* the smaller of the cgroup's and the machine's */
uint64_t msi_sp_auto_room(const msi_sp_auto_sample_t *s) {
  uint64_t room = msi_sp_auto_cg_room(s);
  return room < s->avail ? room : s->avail;
}

/* budget * (pressure - 10)%, at most half the budget: the headroom a scope under memory pressure keeps beyond a
   quarter of the budget */
static uint64_t pressure_extra(uint64_t budget, unsigned pressure) {
  unsigned over = pressure > AUTO_PRESSURE_FLOOR ? pressure - AUTO_PRESSURE_FLOOR : 0;
  return budget / 100 * (over < 50 ? over : 50);
}

/* The decision, pure (for tests): whether a block of `block` bytes goes to spill, given the cgroup's room and
   pressure (its own: v2 memory.pressure; UINT64_MAX and 0 without a cgroup limit), the machine's room
   (MemAvailable + SwapFree) and pressure (/proc/pressure/memory), the budget and whether spilling already;
   *reason says why when it does (msi_sp_auto_reason_t). Each room must keep a quarter of the budget after the
   block (three eighths once spilling: hysteresis), plus what its own scope's pressure asks: the machine's
   pressure counts against the machine's room only. It is the whole machine's stall time, and another cgroup
   stalling at its own limit (or this cgroup's last program, for ten seconds after it ended) raises it while the
   machine has gigabytes free: counting it against the cgroup's room spilled a numpy array that fit. */
bool msi_sp_auto_decide(const msi_sp_auto_view_t *v, uint64_t block, int *reason) {
  uint64_t keep = v->budget / 4 + (v->spilling ? v->budget / 8 : 0);
  uint64_t cg_keep = keep + pressure_extra(v->budget, v->cg_pressure);
  uint64_t m_keep = keep + pressure_extra(v->budget, v->pressure);
  bool cg_ok = v->cg_room >= block && v->cg_room - block >= cg_keep;
  bool m_ok = v->machine_room >= block && v->machine_room - block >= m_keep;
  if (cg_ok && m_ok) return false;
  bool cg_plain = v->cg_room >= block && v->cg_room - block >= keep;
  bool m_plain = v->machine_room >= block && v->machine_room - block >= keep;
  *reason = cg_plain && m_plain ? MSI_SP_AUTO_PRESSURE : !m_plain ? MSI_SP_AUTO_MACHINE : MSI_SP_AUTO_BUDGET;
  return true;
}

static const char *pressure_file = "/proc/pressure/memory", *meminfo_file = "/proc/meminfo";

/* the machine's files a sample reads (tests: fake ones; before the first candidate block) */
void msi_sp_auto_set_files(const char *meminfo, const char *pressure) {
  meminfo_file = meminfo;
  pressure_file = pressure;
}

/* set-up: the budget (bud.cg, found once) and whether pressure is readable; at the first candidate block (never
   at start: a process that never holds a large block reads no file). A forked child keeps its parent's set-up
   and takes its own sample at its first candidate (msi_sp_auto_fork_child). */
void msi_sp_auto_init(void) {
  msi_sp_mark_used();
  if (atomic_load_explicit(&aut.state, memory_order_acquire)) return;
  msi_lock(&aut.lock);
  if (!atomic_load(&aut.state)) {
    msi_sp_budget_find();
    char b[256];
    aut.has_pressure = msi_os_read_file(pressure_file, b, sizeof b) > 0;
    aut.step = bud.cg.limit / 64 > (4ull << 20) ? bud.cg.limit / 64 : 4ull << 20;
    atomic_store(&aut.sample_ns, 0);
    atomic_store_explicit(&aut.state, 1, memory_order_release);
    msi_verbose("spill: auto: blocks of %zu KiB and more stay in RAM while the memory counted stays under 3/4 of "
                "the budget of %llu MiB (%s)%s", (size_t)MSI_SPILL_AUTO_MIN >> 10,
                (unsigned long long)(bud.cg.limit >> 20), bud.cg.stat_path[0] ? bud.cg.stat_path : "RAM",
                aut.has_pressure ? ", less under memory pressure" : "");
  }
  msi_unlock(&aut.lock);
}

/* a new sample (when no other thread is taking one) */
static void auto_refresh(uint64_t now) {
  if (!msi_trylock(&aut.lock)) return;
  msi_sp_auto_sample_t s;
  auto_read(&bud.cg, meminfo_file, aut.has_pressure ? pressure_file : NULL, &s);
  if (s.ok) {
    atomic_store_explicit(&aut.room, msi_sp_auto_cg_room(&s), memory_order_relaxed);
    atomic_store_explicit(&aut.m_room, s.avail, memory_order_relaxed);
    atomic_store_explicit(&aut.pressure, s.pressure, memory_order_relaxed);
    atomic_store_explicit(&aut.cg_pressure, s.cg_pressure, memory_order_relaxed);
    atomic_store_explicit(&aut.since, 0, memory_order_relaxed);
    aut.last_used = s.used;
  }
  atomic_store_explicit(&aut.freed, 0, memory_order_relaxed);
  atomic_store_explicit(&aut.sample_ns, now, memory_order_relaxed);
  atomic_fetch_add_explicit(&aut.samples, 1, memory_order_relaxed);
  msi_unlock(&aut.lock);
}

/* the maintenance tick (once spill runs): a sample when candidate blocks came since the last tick's, so the
   allocation path mostly finds a fresh one */
static uint64_t auto_seen; /* aut.asked at the last tick's sample (the maintenance thread's) */
bool msi_sp_auto_due(void) {
  return atomic_load_explicit(&aut.state, memory_order_acquire) &&
         atomic_load_explicit(&aut.asked, memory_order_relaxed) != auto_seen;
}
void msi_sp_auto_tick(uint64_t now) {
  uint64_t asked = atomic_load_explicit(&aut.asked, memory_order_relaxed);
  if (asked == auto_seen || !atomic_load_explicit(&aut.state, memory_order_acquire)) return; /* an idle program: no reads */
  if (now - atomic_load(&aut.sample_ns) < AUTO_PERIOD_NS) return;
  auto_seen = asked;
  auto_refresh(now);
}

/* a forked child takes its own sample at its first candidate block (its usage is its cgroup's, as the parent's) */
MSI_COLD void msi_sp_auto_fork_child(void) { /* (cold: placed with the fork handlers, which every fork child runs) */
  msi_lock_reset(&aut.lock);
  msi_lock_reset(&find_lock); /* held by a parent's thread reading the budget: not found yet, the child reads it */
  if (atomic_load(&aut.state)) atomic_store(&aut.sample_ns, 0);
}

/* a spilled block of `bytes` was freed: once the spilled bytes freed since the last sample reach the hysteresis
   margin (budget/8, what the way back to RAM asks beyond the mark) the room may be back, and the next candidate
   takes a sample (without it a program that frees everything and starts again would wait for the next period to
   come back to RAM). Smaller frees wait for the period (50 ms while spilling): a program that allocates and frees
   a spilled block in a loop would otherwise read the files at every allocation. */
void msi_sp_auto_freed(size_t bytes) {
  if (!atomic_load_explicit(&aut.spilling, memory_order_relaxed) || !atomic_load_explicit(&aut.sample_ns, memory_order_relaxed))
    return;
  if (atomic_fetch_add_explicit(&aut.freed, bytes, memory_order_relaxed) + bytes >= bud.cg.limit / 8)
    atomic_store_explicit(&aut.sample_ns, 0, memory_order_relaxed);
}

/* a room at the last sample less the bytes sent to RAM since */
static uint64_t less_since(uint64_t room) {
  uint64_t since = atomic_load_explicit(&aut.since, memory_order_relaxed);
  return room == UINT64_MAX ? room : room > since ? room - since : 0;
}
static uint64_t room_now(void) {
  uint64_t a = less_since(atomic_load_explicit(&aut.room, memory_order_relaxed));
  uint64_t b = less_since(atomic_load_explicit(&aut.m_room, memory_order_relaxed));
  return a < b ? a : b;
}
static msi_sp_auto_view_t view_now(bool spilling) {
  return (msi_sp_auto_view_t){.budget = bud.cg.limit,
                              .cg_room = less_since(atomic_load_explicit(&aut.room, memory_order_relaxed)),
                              .machine_room = less_since(atomic_load_explicit(&aut.m_room, memory_order_relaxed)),
                              .pressure = atomic_load_explicit(&aut.pressure, memory_order_relaxed),
                              .cg_pressure = atomic_load_explicit(&aut.cg_pressure, memory_order_relaxed),
                              .spilling = spilling};
}

static MSI_RARE MSI_NOINLINE void auto_switch(bool spill, uint64_t block, int reason) {
  int expected = !spill;
  if (!atomic_compare_exchange_strong(&aut.spilling, &expected, spill)) return;
  uint64_t room = room_now();
  unsigned pr = atomic_load(&aut.pressure), cpr = atomic_load(&aut.cg_pressure);
  bool short_ = less_since(atomic_load(&aut.m_room)) < less_since(atomic_load(&aut.room));
  if (spill) {
    atomic_store(&aut.reason, reason);
    if (atomic_fetch_add(&aut.to_spill, 1) == 0) {
      atomic_store(&aut.began_used, aut.last_used);
      atomic_store(&aut.began_room, room);
      atomic_store(&aut.began_block, block);
    }
    msi_verbose("spill: auto: spilling begins (%s): a block of %llu MiB with %llu MiB of room left (counted %llu "
                "MiB of a budget of %llu MiB, machine %s, pressure %u%%, the cgroup's %u%%)", msi_sp_auto_reason_name(reason),
                (unsigned long long)(block >> 20), (unsigned long long)(room >> 20),
                (unsigned long long)(aut.last_used >> 20), (unsigned long long)(bud.cg.limit >> 20),
                short_ ? "short" : "fine", pr, cpr);
  } else {
    atomic_fetch_add(&aut.to_ram, 1);
    msi_verbose("spill: auto: back to RAM: %llu MiB of room (counted %llu MiB of a budget of %llu MiB, pressure "
                "%u%%)", (unsigned long long)(room >> 20), (unsigned long long)(aut.last_used >> 20),
                (unsigned long long)(bud.cg.limit >> 20), pr);
  }
}

/* Whether the decision about a block of `block` bytes wants a new sample, the last being `age_ns` old (pure, for
   tests; v holds the estimate: the rooms less the bytes sent to RAM since). Within AUTO_PERIOD_NS never; past it
   when spilling (the way back to RAM needs fresh rooms), for a large block (`step` bytes or more: a stale room
   could let it take the last quarter), and near the mark, where the estimate leaves the block less than an
   eighth of the budget beyond what the decision keeps: growth elsewhere since the last sample could decide. A
   small block far from the mark (a temporary of a program whose data fits) uses the estimate up to
   AUTO_FAR_NS: the files' reads (3-5 opens, reads and closes) would land in the middle of its work, every 50 ms. */
bool msi_sp_auto_stale(const msi_sp_auto_view_t *v, uint64_t block, uint64_t step, uint64_t age_ns) {
  if (age_ns < AUTO_PERIOD_NS) return false;
  if (v->spilling || block >= step || age_ns >= AUTO_FAR_NS) return true;
  msi_sp_auto_view_t near = *v;
  near.spilling = true; /* keeps budget/4 + budget/8 (msi_sp_auto_decide's hysteresis) */
  int reason;
  return msi_sp_auto_decide(&near, block, &reason);
}

bool msi_spill_auto_wants(size_t grow) {
  if (!grow) return false; /* a realloc that does not grow stays where it is */
  if (MSI_UNLIKELY(!atomic_load_explicit(&aut.state, memory_order_acquire))) msi_sp_auto_init();
  atomic_fetch_add_explicit(&aut.asked, 1, memory_order_relaxed);
  msi_maint_wake(); /* the tick samples ahead of the next candidate (msi_sp_auto_tick) */
  uint64_t now = msi_now_ns();
  bool spilling = atomic_load_explicit(&aut.spilling, memory_order_relaxed);
  msi_sp_auto_view_t v = view_now(spilling);
  uint64_t last = atomic_load_explicit(&aut.sample_ns, memory_order_relaxed);
  if (msi_sp_auto_stale(&v, grow, aut.step, last ? now - last : UINT64_MAX)) {
    auto_refresh(now);
    spilling = atomic_load_explicit(&aut.spilling, memory_order_relaxed);
    v = view_now(spilling);
  }
  int reason = 0;
  bool spill = msi_sp_auto_decide(&v, grow, &reason);
  if (spill && !spilling && atomic_load_explicit(&aut.sample_ns, memory_order_relaxed) != now) {
    auto_refresh(now); /* confirm with a fresh sample before spilling begins (frees since the last one count) */
    v = view_now(false);
    spill = msi_sp_auto_decide(&v, grow, &reason);
  }
  if (spill != spilling) auto_switch(spill, grow, reason);
  if (!spill) atomic_fetch_add_explicit(&aut.since, grow, memory_order_relaxed);
  return spill;
}

uint64_t msi_sp_auto_samples(void) { return atomic_load(&aut.samples); }

void msi_sp_auto_stats(msi_stats_writer_t *w) {
  if (!msi_spill_auto()) {
    msi_stats_text(w, "spill_auto", "off");
    return;
  }
  msi_stats_text(w, "spill_auto", !atomic_load(&aut.state) ? "unused" : atomic_load(&aut.spilling) ? "spilling" : "ram");
  /* stats.def's rows spill_auto_room .. spill_auto_began_block, in its order */
  const unsigned long long run[] = {room_now(), atomic_load(&aut.pressure), atomic_load(&aut.samples),
                                    atomic_load(&aut.to_spill), atomic_load(&aut.to_ram), atomic_load(&aut.began_used),
                                    atomic_load(&aut.began_room), atomic_load(&aut.began_block)};
  msi_stats_run(w, "spill_auto_room", "spill_auto_began_block", MSI_ARRAY_LEN(run), run);
  msi_stats_text(w, "spill_auto_reason", msi_sp_auto_reason_name(atomic_load(&aut.reason)));
}
