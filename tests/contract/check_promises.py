#!/usr/bin/env python3
"""Checks that every promise of include/memspace.h's `///` comments maps to a test (issue #21).

Usage: check_promises.py SOURCE_DIR [BUILD_DIR]

Reads the header, tests/contract/promises.tsv (NAME, PROMISE, TEST, CASE: the CTest test and the test function or
case string in that test's sources that exercises the promise) and tests/contract/known_gaps.tsv (NAME, PROMISE,
why: promises still without a test, printed as "known gap"). Fails on:
  - a documented public name (an MS_API declaration, or a name whose declaration a `///` comment precedes or
    follows with `///<`) with no row, or a promise the header states for it that maps to no test;
  - a row naming a test CTest does not register (tests/**/CMakeLists.txt, or `ctest -N` in BUILD_DIR), a
    case that does not occur in that test's sources, or a name those sources never use;
  - a row listing an errno (or a promise kind) the header does not state for that name;
  - a row or gap for a name the header no longer documents, or a gap that now has a row.
Promises are identified by name, never by line number: PROMISE is an errno (EINVAL, ENOMEM...) or one of the
kinds below, found by keyword in the name's comment.
"""
import os
import re
import subprocess
import sys

ERRNOS = {"EINVAL", "ENOMEM", "EPERM", "EAGAIN", "ERANGE", "EFAULT", "EIO", "ESTALE", "ENOSYS", "EMFILE"}
# promise kind -> pattern in the comment that states it
KINDS = {
    "complexity": re.compile(r"\bO\(|bounded number of steps"),
    "thread-safety": re.compile(r"thread-safe|Thread-safe|THREAD SAFETY|lock-free"),
    "allocation-free": re.compile(r"[Aa]llocation-free"),
    "alignment": re.compile(r"\baligned\b|alignment"),
    "zeroing": re.compile(r"reads? as zeros?|\bzero(es|ing)\b|\bzero every"),
}
# names a test checks by their effect without spelling them: MS_API (test_exports reads the exported symbols)
USED_BY_EFFECT = {"MS_API"}
DOC = "documented"  # every documented name needs at least one row (its main behaviour)


def header_promises(path):
    """name -> (set of promises, comment text) for every documented public name."""
    lines = open(path, encoding="utf-8").read().split("\n")
    docs = {}
    api = []

    def add(name, text):
        p = {e for e in re.findall(r"\bE[A-Z]{2,}\b", text) if e in ERRNOS}
        p |= {k for k, rx in KINDS.items() if rx.search(text)}
        p.add(DOC)
        old = docs.get(name, (set(), ""))
        docs[name] = (old[0] | p, old[1] + text)

    for line in lines:
        m = re.match(r"\s*#define\s+(\w+).*///<\s*(.*)", line)
        if m:
            add(m.group(1), m.group(2))
        m = re.match(r"\s*MS_API\b.*?\b(ms_\w+)\s*\(", line)
        if m:
            api.append(m.group(1))
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.lstrip().startswith("///") or line.lstrip().startswith("///<"):
            i += 1
            continue
        block = []
        while i < len(lines) and lines[i].lstrip().startswith("///") and not lines[i].lstrip().startswith("///<"):
            block.append(lines[i].lstrip()[3:].strip())
            i += 1
        text = " ".join(block)
        if "@file" in text:
            continue
        # the declaration chunk: lines up to the next blank line or `///` block
        chunk = []
        j = i
        while j < len(lines) and lines[j].strip() and not re.match(r"\s*///[^<]", lines[j]):
            chunk.append(lines[j])
            j += 1
        if not chunk:
            continue
        first = chunk[0]
        if "///<" in first and first.lstrip().startswith("#define"):
            # a section comment (above the section's flag macros): named after its first word
            add("section:" + block[0].split()[0].rstrip(":"), text)
            continue
        names = []
        joined = "\n".join(chunk)
        if first.lstrip().startswith("#if"):
            names = re.findall(r"#define\s+(\w+)", joined)[:1]
        elif first.lstrip().startswith("#define"):
            names = [re.match(r"\s*#define\s+(\w+)", first).group(1)]
        elif first.lstrip().startswith("typedef"):
            stmt = joined.split(";")[0]
            if "{" in stmt:
                names = re.findall(r"}\s*(\w+)\s*;", joined)[:1]
            elif "(" in stmt:
                names = re.findall(r"(\w+)\s*\(", stmt)[:1]
            else:
                names = re.findall(r"(\w+)\s*$", stmt)
        else:
            m = re.search(r"\b(ms_\w+)\s*\(", first)
            names = [m.group(1)] if m else []
        # MS_API declarations in the same chunk share the comment (e.g. a typedef and the call using it)
        names += [n for n in re.findall(r"MS_API\b[^;]*?\b(ms_\w+)\s*\(", joined) if n not in names]
        for n in names:
            add(n, text)
        i = j
    return docs, api


def registered_tests(src, build):
    names = set()
    sources = {}
    targets = {}
    for root, _, files in os.walk(os.path.join(src, "tests")):
        if "CMakeLists.txt" not in files:
            continue
        text = open(os.path.join(root, "CMakeLists.txt"), encoding="utf-8").read()
        here = [os.path.join(root, f) for f in os.listdir(root) if os.path.isfile(os.path.join(root, f))]
        for m in re.finditer(r"add_executable\((\S+)\s+([^)]*)\)", text):
            targets[m.group(1)] = [os.path.join(root, s) for s in m.group(2).split() if not s.startswith("$")]
        for m in re.finditer(r"ms_unit_test\((\S+)\s+SOURCES\s+([^)]*?)(?:LABELS|TIMEOUT|INTERNAL|\))", text):
            names.add(m.group(1))
            srcs = [os.path.join(root, s) for s in m.group(2).split()]
            for f in list(srcs):  # with the test's own headers (#include "x.h" next to it)
                if os.path.exists(f):
                    srcs += [os.path.join(root, h) for h in re.findall(r'#include "([\w.]+)"', open(f).read())
                             if os.path.exists(os.path.join(root, h))]
            sources[m.group(1)] = srcs
        for m in re.finditer(r"add_test\(\s*NAME\s+(\S+)([^)]*)", text):
            name, cmd = m.group(1), m.group(2)
            if "$" in name:
                continue  # a name made in a loop: `ctest -N` in the build directory lists it
            names.add(name)
            files = []
            for tok in re.findall(r"[\w./${}:<>-]+", cmd):
                t = re.sub(r"^\$<TARGET_FILE:(\w+)>$", r"\1", tok)
                if t in targets:
                    files += targets[t]
                base = os.path.basename(tok)
                files += [f for f in here if os.path.basename(f) == base]
            own = [f for f in here if os.path.splitext(os.path.basename(f))[0] == name]
            sources.setdefault(name, []).extend(files or own or here)
    if build:
        out = subprocess.run(["ctest", "-N"], cwd=build, capture_output=True, text=True).stdout
        names |= set(re.findall(r"Test\s+#\d+:\s+(\S+)", out))
    return names, sources


def read_tsv(path):
    rows = []
    if not os.path.exists(path):
        return rows
    for n, line in enumerate(open(path, encoding="utf-8"), 1):
        if not line.strip() or line.startswith("#"):
            continue
        f = line.rstrip("\n").split("\t")
        rows.append((n, f))
    return rows


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    build = sys.argv[2] if len(sys.argv) > 2 else None
    docs, api = header_promises(os.path.join(src, "include", "memspace.h"))
    tests, sources = registered_tests(src, build)
    here = os.path.join(src, "tests", "contract")
    rows = read_tsv(os.path.join(here, "promises.tsv"))
    gaps = read_tsv(os.path.join(here, "known_gaps.tsv"))
    bad = []
    covered = set()
    cache = {}
    for n, f in rows:
        if len(f) != 4:
            bad.append(f"promises.tsv:{n}: expected NAME<TAB>PROMISE<TAB>TEST<TAB>CASE")
            continue
        name, promise, test, case = f
        if name not in docs:
            bad.append(f"promises.tsv:{n}: {name} is not a documented name of memspace.h")
            continue
        if promise not in docs[name][0]:
            bad.append(f"memspace.h: {name}: promise {promise} mapped (promises.tsv:{n}) but the header does not state it")
        if test not in tests:
            bad.append(f"promises.tsv:{n}: {name}: test {test} is not registered in CTest")
            continue
        found = False
        for path in sources.get(test, []):
            if path not in cache:
                try:
                    cache[path] = open(path, encoding="utf-8", errors="replace").read()
                except OSError:
                    cache[path] = ""
            if re.search(r"(?<![\w])" + re.escape(case) + r"(?![\w])", cache[path]):
                found = True
        if not found:
            bad.append(f"promises.tsv:{n}: {name}: case {case} not found in the sources of {test}")
        elif not name.startswith("section:") and name not in USED_BY_EFFECT and not any(
                re.search(r"\b" + re.escape(name) + r"\b", cache.get(p, "")) for p in sources.get(test, [])):
            bad.append(f"promises.tsv:{n}: {name}: the sources of {test} never use it")
        covered.add((name, promise))
    known = set()
    for n, f in gaps:
        if len(f) < 2 or f[0] not in docs or f[1] not in docs[f[0]][0]:
            bad.append(f"known_gaps.tsv:{n}: {f[:2]} is not a promise the header states")
            continue
        if (f[0], f[1]) in covered:
            bad.append(f"known_gaps.tsv:{n}: {f[0]} {f[1]} has a test now: remove the gap")
        known.add((f[0], f[1]))
    for name in api:
        if name not in docs:
            bad.append(f"memspace.h: {name}: public declaration without a /// comment")
    gapped = []
    for name in sorted(docs):
        for p in sorted(docs[name][0]):
            if (name, p) in covered:
                continue
            if (name, p) in known:
                gapped.append(f"memspace.h: {name}: promise {p} has no test (known gap)")
            else:
                bad.append(f"memspace.h: {name}: promise {p} has no test")
    for g in gapped:
        print(g)
    for b in bad:
        print(b)
    total = sum(len(v[0]) for v in docs.values())
    print(f"{len(docs)} documented names, {total} promises: {len(covered)} mapped to tests, "
          f"{len(gapped)} known gaps, {len(bad)} problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
