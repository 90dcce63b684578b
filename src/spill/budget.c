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
    bool ok = msi_os_read_file(bud.cg.stat_path[0] ? bud.cg.stat_path : "/proc/meminfo", buf, sizeof buf) > 0 &&
              msi_os_text_value(buf, bud.cg.dirty_key, &d) && msi_os_text_value(buf, bud.cg.anon_key, &a);
    msi_unlock(&msi_sp_buf_lock);
    if (ok && !bud.cg.stat_path[0]) d *= 1024, a *= 1024; /* meminfo: kB */
    if (ok) {
      atomic_store_explicit(&bud.dirty, d, memory_order_relaxed);
      atomic_store_explicit(&bud.anon, a, memory_order_relaxed);
    }
  }
  *dirty = atomic_load_explicit(&bud.dirty, memory_order_relaxed);
  *anon = atomic_load_explicit(&bud.anon, memory_order_relaxed);
}

/* the cgroup's headroom runs out: dirty and anonymous bytes, which reclaim cannot free at once, past 3/4 */
bool msi_sp_headroom_low(uint64_t dirty, uint64_t anon) { return dirty + anon >= msi_sp_fit_bytes(); }

void msi_sp_budget_init(void) {
  uint64_t ram;
  if (!msi_os_meminfo("MemTotal", &ram)) ram = UINT64_MAX;
  msi_os_cgroup_budget(ram, &bud.cg);
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
