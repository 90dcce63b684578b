#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Spill tests that need root, a loop-mounted filesystem, a memory cgroup or the preloaded library.
spill_scripts.py TEST ; exit 0 pass, 1 fail, 77 skipped (the reason printed). `cleanup` removes what a failed
run may have left (cgroups named memspace-spill-*, the loop mount under BUILD/spill-test)."""
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
BUILD = os.environ.get("MEMSPACE_BUILD", os.path.join(SRC, "build"))
sys.path.insert(0, os.path.join(SRC, "bench", "spill"))
import mscgroup  # noqa: E402

LIB = os.path.join(BUILD, "libmemspace.so")
HELPER = os.path.join(BUILD, "spill_helper")
HELPER_SHARED = os.path.join(BUILD, "spill_helper_shared")
WORK = os.path.join(BUILD, "spill-test")
MNT = os.path.join(WORK, "mnt")
IMG = os.path.join(WORK, "disk.img")
SPILL_DIR = "/var/tmp"


def skip(reason, kind="refused"):
    """the skip contract's line (tests/common/ms_test.sh): "refused" gives the kernel's or the tool's words,
    "missing" names a program that is not installed, a failure under CI=true (CI must have everything)"""
    if kind == "missing" and os.environ.get("CI") in ("true", "1"):
        print(f"MS_SKIP {kind}:", reason, "(CI=true: a failure)")
        sys.exit(1)
    print(f"MS_SKIP {kind}:", reason)
    sys.exit(77)


def need_root():
    if os.geteuid() != 0:
        skip("needs root")


def need_routing():
    """the preloaded library must interpose malloc (the heap's override layer)"""
    out = subprocess.run(["nm", "-D", "--defined-only", LIB], capture_output=True, text=True).stdout
    if not any(line.split()[-1] == "malloc" for line in out.splitlines() if line.split()):
        skip("libmemspace.so does not interpose malloc yet (the heap's override layer is not in this build)")


def env(**extra):
    e = {k: v for k, v in os.environ.items() if not k.startswith("MEMSPACE_") and k != "LD_PRELOAD"}
    e.update({k: str(v) for k, v in extra.items()})
    return e


LAST_STDERR = [""]


def run(argv, **kw):
    p = subprocess.run(argv, capture_output=True, text=True, **kw)
    sys.stdout.write(p.stdout)
    sys.stdout.write(p.stderr)
    LAST_STDERR[0] = p.stderr
    return p.returncode


def cleanup():
    n = mscgroup.cleanup()
    if os.path.ismount(MNT):
        subprocess.run(["umount", "-l", MNT])
    if os.path.exists(IMG):
        out = subprocess.run(["losetup", "-j", IMG], capture_output=True, text=True).stdout
        for line in out.splitlines():
            subprocess.run(["losetup", "-d", line.split(":")[0]])
    shutil.rmtree(WORK, ignore_errors=True)
    print(f"cleanup: {n} cgroups removed")
    return 0


def full_disk():
    """a small loop-mounted ext4 (and xfs, where mkfs.xfs is installed) as the spill directory"""
    need_root()
    for tool in ("mkfs.ext4", "mount", "umount"):
        if not shutil.which(tool):
            skip(f"{tool} not installed", "missing")
    rc = full_disk_on("ext4", 160)
    if rc == 0 and shutil.which("mkfs.xfs"):
        try:
            rc = full_disk_on("xfs", 320)  # xfs's smallest filesystem is 300 MB
        except SystemExit as e:
            if e.code != 77:
                raise
            print("(xfs variant skipped: see above)")
    elif rc == 0:
        print("(xfs variant skipped: mkfs.xfs not installed)")
    return rc


def full_disk_on(fs, mib):
    os.makedirs(MNT, exist_ok=True)
    with open(IMG, "wb") as f:
        f.truncate(mib << 20)
    p = subprocess.run([f"mkfs.{fs}", "-q", "-f" if fs == "xfs" else "-F", IMG], capture_output=True, text=True)
    if p.returncode:
        skip(f"mkfs.{fs}: " + p.stderr.strip())
    p = subprocess.run(["mount", "-o", "loop", IMG, MNT], capture_output=True, text=True)
    if p.returncode:
        skip("mount -o loop refused: " + p.stderr.strip())
    filler = os.path.join(MNT, "filler")
    free0 = os.statvfs(MNT).f_bavail * os.statvfs(MNT).f_frsize

    def helper_run(argv, env):
        """the helper, once the previous one's space is back: xfs frees an unlinked file's blocks in a background
        worker after the last close, and statfs does not wait for it, so a helper started at once under load can
        see the disk still full (the next run's first blocks refused: ENOMEM)"""
        deadline = time.time() + 30
        while True:
            st = os.statvfs(MNT)
            if st.f_bavail * st.f_frsize >= free0 - (1 << 20):
                break
            if time.time() > deadline:
                print(f"FAIL: {fs}: the space of the previous helper's files did not come back in 30 s "
                      f"({st.f_bavail * st.f_frsize >> 20} of {free0 >> 20} MiB free)")
                return 1
            time.sleep(0.05)
        return run(argv, env=env)

    rc = 0
    try:
        print(f"-- {fs}, {mib} MiB")
        if fs == "ext4":
            rc = helper_run([HELPER, "full"], env=env(MEMSPACE_SPILL_DIR=MNT))
            # blocks short of their slot, written after the disk filled up (another file took the rest): no SIGBUS
            rc = rc or helper_run([HELPER, "fullholes", filler], env=env(MEMSPACE_SPILL_DIR=MNT))
            # the same, each block advised MADV_HUGEPAGE by the program just before it is written
            rc = rc or helper_run([HELPER, "fullholes", filler, "huge"], env=env(MEMSPACE_SPILL_DIR=MNT))
        # a growth refused on the full disk keeps the tail a shrink kept for a forked child
        rc = rc or helper_run([HELPER, "forktail", filler], env=env(MEMSPACE_SPILL_DIR=MNT))
        # blocks grown in place until the disk is full keep the free-space margin
        rc = rc or helper_run([HELPER, "growmargin", MNT], env=env(MEMSPACE_SPILL_DIR=MNT))
        left = [x for x in os.listdir(MNT) if x != "lost+found"]
        if left:
            print("FAIL: files left in the spill directory:", left)
            rc = 1
        if os.path.exists(HELPER_SHARED) and rc == 0:
            try:
                need_routing()
                pre = env(LD_PRELOAD=LIB, USE_MALLOC=1, MEMSPACE_SPILL_DIR=MNT)
                if fs == "ext4":
                    rc = helper_run([HELPER_SHARED, "full"], env=dict(pre, MEMSPACE_SPILL_THRESHOLD="512K"))
                    # the refusal is explained once on stderr: the directory and its free space
                    said = LAST_STDERR[0].count("spill: the disk of " + MNT + " is full")
                    if rc == 0 and said != 1:
                        print(f"FAIL: a full spill disk was said {said} times on stderr, once expected")
                        rc = 1
                for extra in ([], ["huge"]):
                    rc = rc or helper_run([HELPER_SHARED, "fullholes", filler, *extra],
                                   env=dict(pre, MEMSPACE_SPILL_THRESHOLD="128K"))
                # blocks freed beside live ones while another writer takes every freed block
                rc = rc or helper_run([HELPER_SHARED, "stalefree", filler], env=dict(pre, MEMSPACE_SPILL_THRESHOLD="128K"))
                # a block moved by realloc beside a live neighbour (copy_file_range reflinks on xfs)
                rc = rc or helper_run([HELPER_SHARED, "movefull", filler], env=dict(pre, MEMSPACE_SPILL_THRESHOLD="64K"))
            except SystemExit:
                print("(preloaded variant skipped: no routing yet)")
    finally:
        subprocess.run(["umount", MNT])
        os.unlink(IMG)
    return rc


def fork_huge():
    """a forked child of a program holding a spilled block whose slot is larger than RAM + swap: the child's
    private mapping of it (MAP_NORESERVE) must succeed, else its writes would reach the parent (label long: the
    block takes half of RAM + swap or more of disk, reserved for a moment)"""
    mem = {}
    for line in open("/proc/meminfo"):
        k, v = line.split(":")
        mem[k] = int(v.split()[0]) << 10
    total = mem["MemTotal"] + mem.get("SwapTotal", 0)
    slot = 1 << total.bit_length()  # a power of two above RAM + swap
    mib = (slot >> 21) + 1  # the smallest block in that slot
    st = os.statvfs(SPILL_DIR)
    free, margin = st.f_bavail * st.f_frsize, max(st.f_blocks * st.f_frsize // 64, 4 << 20)
    if free < (mib << 20) + margin + (4 << 30):
        skip(f"{SPILL_DIR} has {free >> 20} MiB free: a block of {mib} MiB (slot above RAM + swap) needs more")
    return run([HELPER, "forkbig", str(mib)], env=env(MEMSPACE_SPILL_DIR=SPILL_DIR))


def preload(mode, *args, threshold="1M"):
    need_routing()
    return run([HELPER_SHARED, mode, *args], env=env(LD_PRELOAD=LIB, USE_MALLOC=1, MEMSPACE_SPILL_THRESHOLD=threshold,
                                                      MEMSPACE_SPILL_DIR=SPILL_DIR))


def malloc_huge():
    """the malloc family near SIZE_MAX (malloc_huge.c), in spill mode (threshold 4K) and in plain heap mode"""
    need_routing()
    prog = os.path.join(BUILD, "spill_malloc_huge")
    rc_spill = run([prog], env=env(LD_PRELOAD=LIB, MEMSPACE_SPILL_THRESHOLD="4K", MEMSPACE_SPILL_DIR=SPILL_DIR))
    rc_heap = run([prog], env=env(LD_PRELOAD=LIB))
    return 0 if rc_spill == 0 and rc_heap == 0 else 1


def python_fds():
    """real programs: Python closing every descriptor under ulimit -n 20 with spilled blocks (fds.py), and a
    3 MB bytearray under ulimit -f 1000 (RAM where the file may not grow: no MemoryError, no SIGXFSZ)"""
    need_routing()
    import resource
    e = env(LD_PRELOAD=LIB, MEMSPACE_SPILL_THRESHOLD="64K", MEMSPACE_SPILL_DIR=SPILL_DIR)
    path = os.path.join(SPILL_DIR, f"memspace-python-fds-{os.getpid()}")
    nofile = lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (20, 20))
    rc = run([sys.executable, os.path.join(HERE, "fds.py"), path], env=e, preexec_fn=nofile, stdin=subprocess.DEVNULL)
    fsize = lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (1000 * 1024, resource.RLIM_INFINITY))
    code = "b = bytearray(3 * 10**6); b[-1] = 1; c = bytearray(b); print('ok python_fsize', sum(c))"
    rc2 = run([sys.executable, "-c", code], env=e, preexec_fn=fsize)
    if rc2:
        print(f"FAIL python_fsize: exit {rc2}")
    return 0 if rc == 0 and rc2 == 0 else 1


# MS_TEST_TSAN_BUILD=1 (tests/spill/CMakeLists.txt): a ThreadSanitizer build, where no cgroup case can run
TSAN_CGROUP = ("a ThreadSanitizer build: its runtime's shadow of every page the program writes is charged to the "
               "cgroup too, several bytes a byte, and the program is OOM-killed long before its own memory nears "
               "the limit")


def cgroup_run(name, limit, argv, environ):
    """argv in a new memory cgroup of `limit` bytes (as root; skipped with the reason otherwise), its output
    echoed; returns (exit code, stdout, stderr)"""
    need_root()
    if os.environ.get("MS_TEST_TSAN_BUILD") == "1":
        skip(TSAN_CGROUP)
    why = mscgroup.available()
    if why:
        skip(why)
    g = mscgroup.Group(name, limit)
    try:
        rc, out, err, oom = g.run(argv, timeout=150, env=environ)
        sys.stdout.write(out + err)
        print(f"cgroup limit {limit >> 20} MiB, peak {g.peak() >> 20} MiB, exit {rc}{' (OOM-killed)' if oom else ''}")
        return rc, out, err
    finally:
        g.remove()


def in_cgroup(name, limit, argv, threshold="1M", routing=True):
    if routing:
        need_routing()
    rc, out, _ = cgroup_run(name, limit, argv, env(LD_PRELOAD=LIB, MEMSPACE_SPILL_THRESHOLD=threshold,
                                                    MEMSPACE_SPILL_DIR=SPILL_DIR))
    return 0 if rc == 0 and "ok" in out else 1


def stat_of(text, phase, key):
    part = text.split(f"phase {phase}", 1)[1] if f"phase {phase}" in text else ""
    for line in part.splitlines():
        f = line.split()
        if len(f) >= 2 and f[0] == key:
            return int(f[1])
    return None


def stats_hold(out, checks):
    """each (phase, stats line, predicate) of checks holds in the output's stats after "phase NAME" """
    ok = True
    for phase, key, good in checks:
        v = stat_of(out, phase, key)
        print(f"{phase}: {key} = {v}: {'ok' if v is not None and good(v) else 'WRONG'}")
        ok = ok and v is not None and good(v)
    return ok


def cgroup_fits():
    """docs/spill.md, write-back: while the spilled data fits in the cgroup (3/8 of it here) nothing is written
    back and the mappings keep the default advice; beyond it (2x) write-back and MADV_RANDOM start, nothing is
    lost and nothing is OOM-killed (2x, not 3x: every value is read back at the disk's random-read rate)"""
    limit = 256 << 20
    rc, out, _ = cgroup_run("fits", limit, [HELPER_SHARED, "fits", str(3 * limit >> 23), str(2 * limit >> 20)],
                            env(MEMSPACE_SPILL_DIR=SPILL_DIR))
    ok = rc == 0 and "ok fits" in out
    checks = [("fits", "spill_writebacks", lambda v: v == 0), ("fits", "spill_advice_switches", lambda v: v == 0),
              ("beyond", "spill_writebacks", lambda v: v > 0), ("beyond", "spill_advice_switches", lambda v: v >= 1)]
    ok = stats_hold(out, checks) and ok
    return 0 if ok else 1


def cgroup_fork_beyond():
    """a forked child writes back beyond memory (384 MiB in a 192 MiB cgroup) while it holds private copies of a
    block inherited from its parent: write-back unmaps only the child's own shared ranges, never the private ones"""
    rc, out, _ = cgroup_run("forkbeyond", 192 << 20, [HELPER_SHARED, "forkbeyond", "384"], env(MEMSPACE_SPILL_DIR=SPILL_DIR))
    wb = stat_of(out, "child", "spill_writebacks")
    print(f"child: spill_writebacks = {wb}")
    return 0 if rc == 0 and "ok forkbeyond" in out and wb else 1


def maint_unprivileged():
    """the maintenance thread makes spill's write-back calls under SCHED_IDLE only where it can come back
    (Linux treats SCHED_IDLE as nice 20: leaving it needs CAP_SYS_NICE or RLIMIT_NICE 20). As nobody, with no
    capabilities and RLIMIT_NICE 0, beyond the memory of a 64 MiB cgroup, it must never be seen idle, and it runs
    SCHED_BATCH (never SCHED_OTHER: its wake-ups would preempt interactive processes)."""
    if not shutil.which("setpriv"):
        skip("setpriv not installed (util-linux)", "missing")
    nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    helper, environ = HELPER_SHARED, env(MEMSPACE_SPILL_DIR="/var/tmp")  # /var/tmp: nobody may write there
    with tempfile.TemporaryDirectory() as tmp:
        if subprocess.run(nobody + ["test", "-x", helper]).returncode != 0:
            # a build directory nobody cannot reach (a clone under /root, mode 700): the helper and the library it
            # links to, copied where nobody can read them
            os.chmod(tmp, 0o755)
            helper = shutil.copy(HELPER_SHARED, tmp)
            shutil.copy(os.path.join(BUILD, "libmemspace.so.0"), tmp)
            environ["LD_LIBRARY_PATH"] = tmp
        rc, out, err = cgroup_run("maint", 64 << 20, nobody + ["--inh-caps=-all", "--bounding-set=-all", "prlimit",
                                                               "--nice=0", helper, "maintpolicy", "192"], environ)
    if rc != 0 and "Operation not permitted" in err:
        skip("setpriv refused: " + err.strip().splitlines()[-1])
    return 0 if rc == 0 and "ok maintpolicy" in out and "maint_policy=3 idle_seen=0 other_seen=0" in out else 1


def cgroup_auto():
    """MEMSPACE_SPILL_THRESHOLD=auto in a 256 MiB cgroup: 1 MiB blocks stay in RAM, spill past 3/4 of the limit,
    come back to RAM once everything is freed (spill_helper auto); the stats say when and why spilling began"""
    need_routing()
    limit = 256 << 20
    rc, out, err = cgroup_run("auto", limit, [HELPER_SHARED, "auto", str(limit >> 20), str(2 * limit >> 20)],
                              env(LD_PRELOAD=LIB, MEMSPACE_SPILL_THRESHOLD="auto", MEMSPACE_SPILL_DIR=SPILL_DIR,
                                  MEMSPACE_VERBOSE=1))
    ok = rc == 0 and "ok auto" in out
    checks = [("spilling", "spill_auto_to_spill", lambda v: v == 1), ("spilling", "spill_auto_began_used", lambda v: v > 0),
              ("back", "spill_auto_to_ram", lambda v: v == 1)]
    ok = stats_hold(out, checks) and ok
    if "spill: auto: spilling begins (" not in err:
        print("FAIL: MEMSPACE_VERBOSE did not say that spilling began and why")
        ok = False
    return 0 if ok else 1


def cgroup_autofork():
    """auto in a forked child: the parent's memory in the cgroup counts against the child's budget"""
    need_routing()
    limit = 256 << 20
    rc, out, _ = cgroup_run("autofork", limit, [HELPER_SHARED, "autofork", str(limit >> 20)],
                            env(LD_PRELOAD=LIB, MEMSPACE_SPILL_THRESHOLD="auto", MEMSPACE_SPILL_DIR=SPILL_DIR))
    return 0 if rc == 0 and "ok autofork" in out else 1


def cgroup_automid():
    """auto with many 1 MiB blocks at 3x a 128 MiB cgroup (spill_helper automid): the blocks written behind keep
    the cgroup's dirty and write-back bytes under a window, every block keeps its values, no OOM kill; the
    write-back passes stay at idle priority (the program's RAM blocks at 3/4 of the limit do not make them
    urgent: docs/spill.md, write-back)"""
    need_routing()
    limit = 128 << 20
    ok = True
    for mib, factor in ((1, 3), (16, 2)):  # 16: blocks of budget/8, twice the write-behind window
        rc, out, _ = cgroup_run("automid", limit, [HELPER_SHARED, "automid", str(limit >> 20),
                                                   str(factor * limit // (mib << 20)), str(mib)],
                                env(LD_PRELOAD=LIB, MEMSPACE_SPILL_THRESHOLD="auto", MEMSPACE_SPILL_DIR=SPILL_DIR))
        ok = rc == 0 and "ok automid" in out and ok
        checks = [("beyond", "spill_write_behind", lambda v: v > 0), ("beyond", "spill_writebacks", lambda v: v > 0)]
        if mib == 1:  # (a 16 MiB block's own fill may make a pass urgent: 16 MiB dirty of ~40 of page cache)
            checks.append(("beyond", "spill_writebacks_urgent", lambda v: v <= 2))
        ok = stats_hold(out, checks) and ok
    return 0 if ok else 1


def auto_no_meminfo():
    """auto without a readable /proc/meminfo (bind-mounted over by an empty file in a private mount namespace, as
    in a chroot or a container without /proc): the budget and the machine's room come from sysinfo(2), so blocks
    that fit stay in RAM (not: no budget read, every block spilled)"""
    need_routing()
    need_root()
    empty = os.path.join(SPILL_DIR, f"memspace-empty-meminfo-{os.getpid()}")
    open(empty, "w").close()
    code = "b = [bytearray(8 << 20) for _ in range(4)]; print('ok auto_no_meminfo', sum(len(x) for x in b))"
    script = f"mount --bind {empty} /proc/meminfo && exec {sys.executable} -c \"{code}\""
    try:
        p = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script], capture_output=True, text=True,
                           env=env(LD_PRELOAD=LIB, MEMSPACE_SPILL_THRESHOLD="auto", MEMSPACE_SPILL_DIR=SPILL_DIR,
                                   MEMSPACE_VERBOSE=1))
    finally:
        os.unlink(empty)
    sys.stdout.write(p.stdout + p.stderr)
    if p.returncode and "ok auto_no_meminfo" not in p.stdout and ("unshare" in p.stderr or "mount" in p.stderr):
        skip("a private mount namespace was refused: " + p.stderr.strip().splitlines()[-1])
    budget = [int(l.split("the budget of ", 1)[1].split()[0]) for l in p.stderr.splitlines() if "the budget of " in l]
    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") >> 20
    ok = p.returncode == 0 and "ok auto_no_meminfo" in p.stdout and "spilling begins" not in p.stderr
    ok = ok and budget and max(budget) <= ram
    print(f"budgets said: {budget} MiB (RAM {ram} MiB): {'ok' if ok else 'WRONG'}")
    return 0 if ok else 1


def run_spill():
    """`memspace run --spill [--spill-dir DIR]` sets MEMSPACE_SPILL_THRESHOLD=auto (a size given with
    --spill-threshold wins); the program's stats then show auto"""
    tool = os.path.join(BUILD, "memspace")
    p = subprocess.run([tool, "run", "--spill", "--spill-dir", SPILL_DIR, "--", "env"], capture_output=True, text=True)
    ok = p.returncode == 0 and "MEMSPACE_SPILL_THRESHOLD=auto\n" in p.stdout and f"MEMSPACE_SPILL_DIR={SPILL_DIR}\n" in p.stdout
    p2 = subprocess.run([tool, "run", "--spill", "--spill-threshold", "4M", "--", "env"], capture_output=True, text=True)
    ok = ok and "MEMSPACE_SPILL_THRESHOLD=4M\n" in p2.stdout
    p3 = subprocess.run([tool, "run", "--spill", "--stats", "--", "true"], capture_output=True, text=True)
    ok = ok and "spill_auto" in p3.stderr and "nothing is spilled" not in p3.stderr
    if not ok:
        print("FAIL:", p.returncode, p.stdout[-500:], p.stderr, p2.stdout[-300:], p3.stderr[-800:])
    else:
        print("ok run_spill")
    return 0 if ok else 1


def strace_calls(argv, environ):
    """argv run under strace -f: a list of (syscall name, its arguments' text), or None when ptrace is refused"""
    log = os.path.join(WORK, f"strace-{os.getpid()}.log")
    os.makedirs(WORK, exist_ok=True)
    p = subprocess.run(["strace", "-f", "-qq", "-s", "200", "-o", log, *argv], capture_output=True, text=True,
                       env=environ)
    if p.returncode != 0 and not os.path.exists(log):
        return None, p.stderr.strip()
    calls = []
    with open(log) as f:
        for line in f:
            parts = line.split(None, 1)  # "PID name(args) = result"
            if len(parts) == 2 and "(" in parts[1] and not parts[1].startswith(("+++", "---", "<...")):
                name, rest = parts[1].split("(", 1)
                calls.append((name, rest))
    os.unlink(log)
    return calls, ""


def start_quiet():
    """A process that never holds a large block makes no spill system call (docs/spill.md, start-up): under a fixed
    threshold and under auto, a shell script's processes (LD_PRELOAD, and `memspace run --spill`) make the same
    calls as with the library preloaded without spill, except the descriptor table's growth (getrlimit, fcntl
    F_DUPFD and close, one each per process and fork); no spill directory probe (a file created, fstatfs, fallocate) and no budget
    read (cgroup files, /proc/meminfo, /proc/pressure/memory). Under `memspace run` the tool checks the directory
    once, before it starts the program. A process with a spilled block does check it (the check moved, not gone)."""
    need_routing()
    if not shutil.which("strace"):
        skip("strace not installed (Debian package strace)", "missing")
    script = "for i in 1 2 3; do /bin/true; done; cat /dev/null"
    argv = ["sh", "-c", script]
    base, why = strace_calls(argv, env(LD_PRELOAD=LIB))
    if base is None:
        print("MS_SKIP refused: strace: " + why)
        sys.exit(77)
    nproc = 1 + 4  # sh and its four commands (each grows its table at fork and after exec)

    def counts(calls):
        c = {}
        for name, _ in calls:
            c[name] = c.get(name, 0) + 1
        return c

    def paths(calls):
        return {rest.split('"')[1] for name, rest in calls if name in ("open", "openat") and '"' in rest}

    spill_marks = ("O_TMPFILE", "/proc/pressure", "/sys/fs/cgroup", "/proc/self/cgroup", "hpage_pmd_size")
    ok = True
    for thr in ("1M", "auto"):
        calls, _ = strace_calls(argv, env(LD_PRELOAD=LIB, MEMSPACE_SPILL_THRESHOLD=thr, MEMSPACE_SPILL_DIR=SPILL_DIR))
        cb, cs = counts(base), counts(calls)
        diff = {k: cs.get(k, 0) - cb.get(k, 0) for k in set(cb) | set(cs) if cs.get(k, 0) != cb.get(k, 0)}
        extra = {k: v for k, v in diff.items() if not (k in ("fcntl", "close", "prlimit64", "getrlimit") and 0 < v <= 2 * nproc)}
        new_paths = paths(calls) - paths(base)
        marks = [rest[:120] for name, rest in calls if any(m in rest for m in spill_marks)]
        spill_calls = [name for name, _ in calls if name in ("fallocate", "fstatfs", "statfs", "ftruncate")]
        good = not extra and not new_paths and not marks and not spill_calls
        print(f"threshold {thr}: {len(calls)} calls against {len(base)} without spill; differences {diff}; "
              f"new files {sorted(new_paths)}; spill calls {spill_calls[:5]} {marks[:3]}: {'ok' if good else 'WRONG'}")
        ok = ok and good
    # memspace run --spill: the tool's one check for the tree, nothing in the program's processes
    tool = os.path.join(BUILD, "memspace")
    calls, _ = strace_calls([tool, "run", "--spill", "--spill-dir", SPILL_DIR, "--", *argv], env())
    probes = [rest[:100] for name, rest in calls if "O_TMPFILE" in rest]
    falloc = [name for name, _ in calls if name == "fallocate"]
    good = len(probes) == 1 and len(falloc) <= 2
    print(f"memspace run --spill: {len(probes)} directory probe(s), {len(falloc)} fallocate: {'ok' if good else 'WRONG'}")
    ok = ok and good
    # a large block: under a fixed threshold it is spilled, so the directory is checked (the check moved, not
    # gone); under auto, where it stays in RAM, the budget is read but no file created
    code = "b = bytearray(8 << 20); print('ok large', len(b))"
    good = True
    for thr, want_probe in (("1M", True), ("auto", False)):
        calls, _ = strace_calls([sys.executable, "-c", code], env(LD_PRELOAD=LIB, MEMSPACE_SPILL_THRESHOLD=thr,
                                                                  MEMSPACE_SPILL_DIR=SPILL_DIR))
        probes = [rest[:100] for name, rest in calls if "O_TMPFILE" in rest]
        budget = [rest[:100] for name, rest in calls if "/proc/pressure" in rest or "cgroup" in rest]
        g = (len(probes) >= 1) == want_probe and (thr != "auto" or budget)
        print(f"a large block under {thr}: {len(probes)} directory probe(s), {len(budget)} budget file(s): "
              f"{'ok' if g else 'WRONG'}")
        good = good and g
    return 0 if ok and good else 1


def main():
    t = sys.argv[1] if len(sys.argv) > 1 else ""
    if t == "cleanup":
        return cleanup()
    if t == "full_disk":
        return full_disk()
    if t == "fork_huge":
        return fork_huge()
    if t == "malloc_huge":
        return malloc_huge()
    if t == "python_fds":
        return python_fds()
    if t == "preload_closeall":
        return preload("closeall", threshold="64K")
    if t == "preload_fdbudget":
        return preload("fdbudget", threshold="4K")
    if t == "preload_realloc":
        return preload("realloc")
    if t == "preload_smallgrow":
        return preload("smallgrow", threshold="4K")
    if t == "preload_many":
        return preload("many", "100000", threshold="4K")
    if t == "preload_fork":
        return preload("fork")
    if t == "auto_no_meminfo":
        return auto_no_meminfo()
    if t == "preload_aslimit":  # ulimit -v 4 GB: the reservation shrank to a quarter of it (spill was off below 19 GiB)
        need_routing()
        import resource
        lim = 4 << 30
        return run([HELPER_SHARED, "aslimit"], env=env(LD_PRELOAD=LIB, MEMSPACE_SPILL_THRESHOLD="1M",
                                                       MEMSPACE_SPILL_DIR=SPILL_DIR),
                   preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (lim, lim)))
    if t == "preload_fds":  # started with only 0, 1, 2 open (close_fds): no other before spilling
        need_routing()
        return run([HELPER_SHARED, "fds"], env=env(LD_PRELOAD=LIB, USE_MALLOC=1, MEMSPACE_SPILL_THRESHOLD="1M",
                                                   MEMSPACE_SPILL_DIR=SPILL_DIR, EXPECT_FDS="0,1,2"),
                   stdin=subprocess.DEVNULL)
    limit = 64 << 20
    if t == "cgroup_python":
        py = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
        if subprocess.run([py, "-c", "import numpy"], capture_output=True).returncode:
            skip("python3-numpy not installed")
        return in_cgroup("python", limit, [py, os.path.join(HERE, "hold.py"), str(3 * limit >> 20)])
    if t == "cgroup_r":
        if not shutil.which("Rscript"):
            skip("Rscript not installed (r-base-core)")
        limit = 128 << 20
        # threshold 1M: R's own 1-4 MiB blocks (stacks, tables) are spilled too, and read by mclapply workers
        return in_cgroup("r", limit, ["Rscript", "--vanilla", os.path.join(HERE, "hold.R"), str(3 * limit >> 20)],
                         threshold="1M")
    if t == "r_mclapply":  # no cgroup: forked workers while the parent keeps allocating (docs/spill.md, fork)
        if not shutil.which("Rscript"):
            skip("Rscript not installed (r-base-core)")
        need_routing()
        return run(["Rscript", "--vanilla", os.path.join(HERE, "mclapply.R"), "10"],
                   env=env(LD_PRELOAD=LIB, MEMSPACE_SPILL_THRESHOLD="1M", MEMSPACE_SPILL_DIR=SPILL_DIR), timeout=150)
    if t == "cgroup_c":
        return in_cgroup("c", limit, [HELPER_SHARED, "big", str(3 * limit >> 20)], routing=False)  # ms_spill_alloc
    if t == "cgroup_fits":
        return cgroup_fits()
    if t == "cgroup_fork_beyond":
        return cgroup_fork_beyond()
    if t == "cgroup_auto":
        return cgroup_auto()
    if t == "cgroup_autofork":
        return cgroup_autofork()
    if t == "cgroup_automid":
        return cgroup_automid()
    if t == "run_spill":
        return run_spill()
    if t == "start_quiet":
        return start_quiet()
    if t == "maint_unprivileged":
        return maint_unprivileged()
    print("unknown test", t)
    return 2


if __name__ == "__main__":
    sys.exit(main())
