#!/usr/bin/env python3
"""check_promises.py fails on each kind of gap: copies the header and tests/ to a temporary tree, breaks one
thing at a time and expects exit 1 with the line naming it (and exit 0 on the unchanged copy)."""
import os
import shutil
import subprocess
import sys
import tempfile

SRC = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))
CHECK = os.path.join(SRC, "tests", "contract", "check_promises.py")


def run(tree):
    r = subprocess.run([sys.executable, CHECK, tree], capture_output=True, text=True)
    return r.returncode, r.stdout


def case(label, edit, expect):
    with tempfile.TemporaryDirectory() as tree:
        shutil.copytree(os.path.join(SRC, "include"), os.path.join(tree, "include"))
        shutil.copytree(os.path.join(SRC, "tests"), os.path.join(tree, "tests"))
        if edit:
            edit(tree)
        rc, out = run(tree)
        ok = rc == (1 if expect else 0) and (not expect or expect in out)
        print(("ok   " if ok else "FAIL ") + label + ("" if ok else f": exit {rc}, output:\n{out}"))
        return ok


def table(tree):
    return os.path.join(tree, "tests", "contract", "promises.tsv")


def drop_row(name, promise):
    def edit(tree):
        lines = open(table(tree)).read().split("\n")
        lines = [l for l in lines if not l.startswith(f"{name}\t{promise}\t")]
        open(table(tree), "w").write("\n".join(lines))
    return edit


def add_row(row):
    def edit(tree):
        with open(table(tree), "a") as f:
            f.write(row + "\n")
    return edit


def new_call(tree):
    h = os.path.join(tree, "include", "memspace.h")
    text = open(h).read().replace("#ifdef __cplusplus\n}", "/// A new call. NULL + EINVAL for NULL.\n"
                                  "MS_API void *ms_new_call(void *p);\n\n#ifdef __cplusplus\n}", 1)
    open(h, "w").write(text)


results = [
    case("the unchanged tree passes", None, None),
    case("a stated errno without a row", drop_row("ms_space_malloc", "EINVAL"),
         "memspace.h: ms_space_malloc: promise EINVAL has no test"),
    case("a new documented call without a row", new_call, "memspace.h: ms_new_call: promise documented has no test"),
    case("a row naming an unregistered test", add_row("ms_version\tthread-safety\tno_such_test\tmain"),
         "test no_such_test is not registered"),
    case("a row naming a case the test lacks", add_row("ms_version\tthread-safety\ttest_promises\tno_such_case"),
         "case no_such_case not found in the sources of test_promises"),
    case("a row for an errno the header does not state", add_row("ms_version\tEINVAL\ttest_promises\treaders"),
         "memspace.h: ms_version: promise EINVAL mapped"),
]
sys.exit(0 if all(results) else 1)
