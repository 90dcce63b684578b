#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""ms_pages_reserve's room check inside a real memory cgroup (include/memspace.h, ms_pages_reserve): a reservation
pre-faulted or locked beyond the cgroup's limit less its working set is refused with ENOMEM before a page is
touched, instead of the cgroup's OOM killer ending the process; one that fits is not refused. Needs root and a
writable memory cgroup (v1 or v2); skipped with the reason otherwise.
pages_cgroup.py HELPER ; pages_cgroup.py cleanup (cgroups named memspace-pages-* a killed run left)."""
import os
import sys

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(SRC, "bench", "spill"))
import mscgroup  # noqa: E402

mscgroup.PREFIX = "memspace-pages-"  # its own names: spill's cleanup and this one's never remove each other's


def case(helper, limit_mib, touch_mib, reserve_mib, flags, expect):
    g = mscgroup.Group(f"{reserve_mib}", limit_mib << 20)
    try:
        rc, out, err, oom = g.run([helper, str(touch_mib), str(reserve_mib), flags], timeout=120,
                                  env={k: v for k, v in os.environ.items() if not k.startswith("MEMSPACE_")})
    finally:
        g.remove()
    got = "OOM-killed" if oom else f"exit {rc}: {out.strip()} {err.strip()}"
    ok = rc == 0 and out.startswith(expect)
    print(f"cgroup {limit_mib} MiB, {touch_mib} MiB touched, reserve {reserve_mib} MiB {flags}: {got}: "
          f"{'ok' if ok else 'WRONG, expected ' + expect}")
    return ok


def swap_free_mib():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("SwapFree:"):
                return int(line.split()[1]) >> 10
    return 0


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "cleanup":
        print(f"cleanup: {mscgroup.cleanup()} cgroups removed")
        return 0
    helper = sys.argv[1]
    if os.environ.get("MS_TEST_TSAN_BUILD") == "1":  # tests/os/CMakeLists.txt, a ThreadSanitizer build
        print("MS_SKIP refused: a ThreadSanitizer build: its runtime's shadow of every page the helper writes is "
              "charged to the cgroup too, several bytes a byte, so the cgroup's OOM killer ends it where its own "
              "memory would fit")
        return 77
    why = mscgroup.available()
    if why:
        print("MS_SKIP refused:", why)
        return 77
    # free swap counts for a cgroup that may swap (not for locked pages): with swap, what an unlocked reservation
    # may take depends on it, and the refusals below are checked locked only
    swap = swap_free_mib()
    unlocked_refusals = swap < 128
    if not unlocked_refusals:
        print(f"{swap} MiB of free swap: the unlocked refusals are not checked (swap counts for them)")
    ok = case(helper, 64, 0, 256, "populate,lock", "refused: Cannot allocate memory")
    ok &= case(helper, 64, 0, 16, "populate", "reserved")
    ok &= case(helper, 160, 96, 32, "populate", "reserved")
    if unlocked_refusals:
        ok &= case(helper, 64, 0, 256, "populate", "refused: Cannot allocate memory")
        # the working set counts: 96 of 160 MiB touched leaves no room for 96 MiB more, room for 32
        ok &= case(helper, 160, 96, 96, "populate", "refused: Cannot allocate memory")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
