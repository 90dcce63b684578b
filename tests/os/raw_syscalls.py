#!/usr/bin/env python3
"""Every system call goes through the os.h wrappers (msi_os_*), so fault injection and the syscall counters reach
it: no file of src/ outside src/os/ calls one directly. Prints file:line of each direct call and fails on any.
Comments and string literals are ignored; member calls (x->read(), x.read()) and the wrappers are not calls.
POSIX thread functions (pthread_*) are the library's other dependency, not system calls here; sysconf and
abort are libc's."""
import os
import re
import sys

CALLS = ("mmap", "mmap64", "munmap", "mremap", "mprotect", "madvise", "mlock", "munlock", "mlockall", "open",
         "open64", "openat", "read", "pread", "pwrite", "write", "close", "fallocate", "ftruncate", "fstat",
         "fstatat", "stat", "lstat", "statfs", "fstatfs", "lseek", "fsync", "fdatasync", "sync_file_range",
         "posix_fadvise", "posix_fallocate", "copy_file_range", "unlink", "mkdir", "rename", "readlink", "dup",
         "dup2", "dup3", "pipe", "pipe2", "fcntl", "ioctl", "mincore", "mbind", "set_mempolicy", "get_mempolicy",
         "membarrier", "memfd_create", "getrlimit", "setrlimit", "prlimit", "getrusage", "getpid", "gettid",
         "getppid", "getpriority", "setpriority", "sched_setscheduler", "sched_getscheduler", "sched_setattr",
         "sched_yield", "sched_getaffinity", "nanosleep", "clock_nanosleep", "clock_gettime", "usleep", "sleep",
         "prctl", "kill", "tgkill", "fork", "vfork", "sysinfo", "uname", "syscall")
CALL = re.compile(r"(?<![\w.>$])(" + "|".join(CALLS) + r")\s*\(")


def strip(text):
    """comments and string/char literals blanked, newlines kept (so line numbers stay)"""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (j - i - 1) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..", "src")
    src = os.path.normpath(src)
    found = 0
    for root, dirs, files in os.walk(src):
        rel = os.path.relpath(root, src)
        if rel == "os" or rel.startswith("os" + os.sep):
            continue
        for f in sorted(files):
            if not f.endswith((".c", ".h")):
                continue
            path = os.path.join(root, f)
            with open(path, encoding="utf-8") as fh:
                code = strip(fh.read())
            for no, line in enumerate(code.split("\n"), 1):
                for m in CALL.finditer(line):
                    print("%s:%d: direct %s() outside src/os/: use its os.h wrapper (msi_os_*)"
                          % (os.path.relpath(path, os.path.dirname(src)), no, m.group(1)))
                    found += 1
    print("%d direct system call%s outside src/os/" % (found, "" if found == 1 else "s"))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
