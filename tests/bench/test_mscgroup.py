#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/spill/mscgroup.py's cleanup() removes only the cgroups of its own process and of runs that are gone (with
the processes left in them), never those of another process running the same tests beside it (a second ctest, a
benchmark). Needs root and a writable memory cgroup; exit 77 with the reason otherwise.
test_mscgroup.py ; test_mscgroup.py cleanup (the CTest cleanup fixture: what a killed run of this test left)."""
import os
import subprocess
import sys

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPILL = os.path.join(SRC, "bench", "spill")
sys.path.insert(0, SPILL)
import mscgroup  # noqa: E402

PREFIX = "memspace-mscgtest-"  # its own names: the spill and pages tests' cleanups and this one's stay apart
mscgroup.PREFIX = PREFIX

# a process that makes a group NAME (prints its path), then: "wait" holds it until stdin closes and removes it;
# "exit" leaves it behind with a process inside (a run killed before its cleanup)
MAKER = f"""
import os, subprocess, sys
sys.path.insert(0, {SPILL!r})
import mscgroup
mscgroup.PREFIX = {PREFIX!r}
g = mscgroup.Group(sys.argv[1], 64 << 20)
print(g.path, flush=True)
if sys.argv[2] == "exit":
    g.popen(["sleep", "600"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, start_new_session=True)
    os._exit(0)
sys.stdin.read()
g.remove()
"""


def maker(name, mode):
    p = subprocess.Popen([sys.executable, "-c", MAKER, name, mode], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True)
    return p, p.stdout.readline().strip()


def running(pid):
    """pid names a process that has not ended (a zombie has: killed, not yet reaped by whoever adopted it)"""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "cleanup":
        print(f"cleanup: {mscgroup.cleanup()} cgroups removed")
        return 0
    if os.geteuid() != 0:
        print("MS_SKIP refused: memory cgroups need root")
        return 77
    why = mscgroup.available()
    if why:
        print(f"MS_SKIP refused: {why}")
        return 77
    _, base = mscgroup._own_memory_cgroup()
    live, live_path = maker("live", "wait")
    dead, dead_path = maker("dead", "exit")
    dead.wait()
    own = mscgroup.Group("own", 64 << 20)
    # a group named after a running process (this one's parent) that started at another time: its maker is gone
    reused = os.path.join(base, f"{PREFIX}reused-{os.getppid()}.1")
    os.mkdir(reused)
    fail = 0
    try:
        if not (live_path and dead_path):
            print("FAIL: a maker process did not create its group")
            return 1
        with open(os.path.join(dead_path, "cgroup.procs")) as f:
            left = f.read().split()
        n = mscgroup.cleanup()
        for path, kept, what in ((live_path, True, "another running process's group"),
                                 (dead_path, False, "the group of a maker that is gone"),
                                 (own.path, False, "this process's own group"),
                                 (reused, False, "a group whose maker's pid now names another process")):
            ok = os.path.isdir(path) == kept
            print(f"{'ok' if ok else 'FAIL'}: {what} {'kept' if kept else 'removed'}: {os.path.basename(path)}")
            fail |= not ok
        gone = [pid for pid in left if running(pid)]
        if gone:
            print(f"FAIL: processes left in the removed group still run: {gone}")
            fail = 1
        if n != 3:
            print(f"FAIL: cleanup() said {n} groups removed, 3 expected")
            fail = 1
    finally:
        live.stdin.close()
        live.wait(timeout=60)
        own.remove()
        for path in (reused, dead_path):
            if path and os.path.isdir(path):
                g = mscgroup.Group.__new__(mscgroup.Group)
                g.version, g.path, g.children = mscgroup._own_memory_cgroup()[0], path, []
                g.remove()
    if live_path and os.path.isdir(live_path):
        print("FAIL: the running process did not remove its own group")
        fail = 1
    return 1 if fail else 0


if __name__ == "__main__":
    sys.exit(main())
