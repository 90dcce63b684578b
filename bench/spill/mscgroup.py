# SPDX-License-Identifier: MIT
"""Memory cgroups for the spill tests and benchmark (v2 or v1, whichever the machine has; needs root).

Group(name, limit_bytes) creates a child of this process's own memory cgroup (so it works inside containers
that delegate a subtree), sets the limit (and no swap beyond it where the controller has that knob), runs
commands inside it and removes it. Names are 'memspace-spill-NAME-PID.START' (the creating process and its start
time), so cleanup() removes the leftovers of runs that are gone and never the groups of another process running
the same tests."""
import os
import signal
import subprocess
import time

PREFIX = "memspace-spill-"


def _own_memory_cgroup():
    """(version, absolute directory of this process's memory cgroup) or (None, reason)."""
    try:
        lines = open("/proc/self/cgroup").read().splitlines()
    except OSError as e:
        return None, f"/proc/self/cgroup: {e}"
    v1 = v2 = None
    for line in lines:
        hid, ctrls, path = line.split(":", 2)
        if "memory" in ctrls.split(","):
            v1 = path
        if hid == "0" and ctrls == "":
            v2 = path
    if v1 is not None and os.path.isdir("/sys/fs/cgroup/memory"):
        return 1, os.path.normpath("/sys/fs/cgroup/memory/" + v1)
    if v2 is not None:
        root = "/sys/fs/cgroup" if os.path.exists("/sys/fs/cgroup/cgroup.controllers") else "/sys/fs/cgroup/unified"
        d = os.path.normpath(root + "/" + v2)
        try:
            if "memory" in open(os.path.join(root, "cgroup.controllers")).read().split():
                return 2, d
        except OSError:
            pass
        return None, "cgroup v2 without the memory controller"
    return None, "no memory cgroup controller mounted"


def _start_time(pid):
    """the start time of process pid (clock ticks after boot, field 22 of /proc/PID/stat) as a string, or None when
    there is no such process"""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _owner_tag():
    """PID.START of this process: a pid alone may be reused by another process once this one is gone"""
    return f"{os.getpid()}.{_start_time(os.getpid())}"


def _owner_running(name):
    """whether the process that created the group `name` runs and is another than this one. The owner is the
    name's PID.START (or a PID alone); a process with that pid started at another time is another process (the
    pid was reused), so the owner is gone. A name without an owner (not made by Group) counts as running: not
    ours to remove."""
    pid, _, start = name.rsplit("-", 1)[-1].partition(".")
    if not pid.isdigit():
        return True
    if int(pid) == os.getpid():
        return False
    now = _start_time(int(pid))
    return now is not None and (not start or now == start)


def available():
    """None when memory cgroups can be made here, else the reason."""
    if os.geteuid() != 0:
        return "not root"
    v, d = _own_memory_cgroup()
    if v is None:
        return d
    try:
        g = Group("probe", 64 << 20)
        g.remove()
    except OSError as e:
        return f"cannot create a memory cgroup under {d}: {e.strerror}"
    return None


def _write(path, value):
    with open(path, "w") as f:
        f.write(str(value))


class Group:
    def __init__(self, name, limit_bytes, parent=None):
        if parent is None:
            self.version, base = _own_memory_cgroup()
            if self.version is None:
                raise OSError(0, base)
            self.path = os.path.join(base, PREFIX + name + "-" + _owner_tag())
        else:
            self.version = parent.version
            self.path = os.path.join(parent.path, name)
        os.mkdir(self.path)
        self.children = []
        try:
            if self.version == 2:
                if parent is None:
                    pass
                if limit_bytes:
                    _write(os.path.join(self.path, "memory.max"), limit_bytes)
                    if os.path.exists(os.path.join(self.path, "memory.swap.max")):
                        _write(os.path.join(self.path, "memory.swap.max"), 0)
            else:
                if limit_bytes:
                    _write(os.path.join(self.path, "memory.limit_in_bytes"), limit_bytes)
                    memsw = os.path.join(self.path, "memory.memsw.limit_in_bytes")
                    if os.path.exists(memsw) and os.environ.get("MS_CGROUP_ALLOW_SWAP") != "1":
                        try:
                            _write(memsw, limit_bytes)
                        except OSError:
                            pass
        except OSError:
            self.remove()
            raise

    def child(self, name, limit_bytes=0):
        """a leaf under this group (v2: enables the memory controller for children first)"""
        if self.version == 2:
            try:
                _write(os.path.join(self.path, "cgroup.subtree_control"), "+memory")
            except OSError:
                pass
        c = Group(name, limit_bytes, parent=self)
        self.children.append(c)
        return c

    def preexec(self):
        path = os.path.join(self.path, "cgroup.procs")
        return lambda: _write(path, os.getpid())

    def popen(self, argv, **kw):
        return subprocess.Popen(argv, preexec_fn=self.preexec(), **kw)

    def run(self, argv, timeout=None, **kw):
        """(returncode, stdout, stderr, killed_by_oom) ; returncode < 0: killed by that signal"""
        p = self.popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
            return -9, out, err + "\n(timeout)", False
        return p.returncode, out, err, p.returncode == -signal.SIGKILL

    def peak(self):
        for f in ("memory.max_usage_in_bytes", "memory.peak"):
            try:
                return int(open(os.path.join(self.path, f)).read())
            except (OSError, ValueError):
                pass
        return 0

    def stat(self, key):
        try:
            for line in open(os.path.join(self.path, "memory.stat")):
                k, v = line.split()
                if k == key:
                    return int(v)
        except OSError:
            pass
        return 0

    def remove(self):
        for c in self.children:
            c.remove()
        self.children = []
        for _ in range(100):
            try:
                procs = open(os.path.join(self.path, "cgroup.procs")).read().split()
            except OSError:
                return
            for pid in procs:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except OSError:
                    pass
            try:
                os.rmdir(self.path)
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.05)


def cleanup():
    """removes the PREFIX* cgroups under this process's memory cgroup that this process made or whose maker is gone
    (the leftovers of a killed run, with the processes still in them); those of a running process (another test
    or benchmark run beside this one) stay. Returns how many were removed."""
    v, base = _own_memory_cgroup()
    if v is None or not os.path.isdir(base):
        return 0
    n = 0
    for name in os.listdir(base):
        if name.startswith(PREFIX) and not _owner_running(name):
            g = Group.__new__(Group)
            g.version, g.path, g.children = v, os.path.join(base, name), []
            for sub in sorted(os.listdir(g.path)):
                p = os.path.join(g.path, sub)
                if os.path.isdir(p):
                    c = Group.__new__(Group)
                    c.version, c.path, c.children = v, p, []
                    g.children.append(c)
            g.remove()
            n += 1
    return n
