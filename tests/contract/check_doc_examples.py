#!/usr/bin/env python3
"""check_doc_examples.py SRC BUILD CC: every C example of README.md and docs/*.md compiles as written with
-std=c11 -Wall -Wextra -Werror -pedantic against include/memspace.h, links with libmemspace.a and -lpthread only,
and runs to exit status 0: a reader who pastes one gets a working program. An example is a ```c block; one without
`main` is a function body (its #include lines go to the top). docs/contract.md's blocks are declaration listings,
checked by test_contract_api, and are left out. A run refused for want of privilege (an example returns 1 when its
allocation fails) is reported as a skip with the program's words, exit status 77."""
import glob, os, re, subprocess, sys, tempfile

src, build, cc = sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "cc"
lib = os.path.join(build, "libmemspace.a")
docs = [os.path.join(src, "README.md")] + sorted(glob.glob(os.path.join(src, "docs", "*.md")))
failed, refused, count = [], [], 0
with tempfile.TemporaryDirectory(prefix="memspace-examples.") as tmp:
    for doc in docs:
        if os.path.basename(doc) == "contract.md":
            continue
        text = open(doc, encoding="utf-8").read()
        for m in re.finditer(r"^```c\n(.*?)^```", text, re.S | re.M):
            count += 1
            line = text.count("\n", 0, m.start()) + 1
            where = f"{os.path.relpath(doc, src)}:{line}"
            body = m.group(1)
            if re.search(r"\bmain\s*\(", body):
                program = body
            else:
                lines = body.splitlines()
                includes = [l for l in lines if l.startswith("#include")]
                rest = [l for l in lines if not l.startswith("#include")]
                program = "\n".join(includes + ["#include <memspace.h>", "int main(void) {"] + rest +
                                    ["  return 0;", "}", ""])
            c = os.path.join(tmp, f"ex{count}.c")
            exe = os.path.join(tmp, f"ex{count}")
            open(c, "w").write(program)
            r = subprocess.run([cc, "-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic", "-I",
                                os.path.join(src, "include"), c, "-o", exe, lib, "-lpthread"],
                               capture_output=True, text=True)
            if r.returncode != 0:
                failed.append(f"{where}: does not compile:\n{r.stderr[:2000]}")
                continue
            try:
                r = subprocess.run([exe], capture_output=True, text=True, timeout=120)
            except subprocess.TimeoutExpired:
                failed.append(f"{where}: still running after 120 s")
                continue
            if r.returncode == 1 and os.geteuid() != 0:
                refused.append(f"{where}: exit status 1 as a user without privileges: {r.stderr.strip()}")
            elif r.returncode != 0:
                failed.append(f"{where}: exit status {r.returncode}: {r.stdout}{r.stderr}")
            else:
                print(f"ok {where}")
for f in failed:
    print("FAIL:", f)
if count < 5:
    print(f"FAIL: only {count} examples found")
    sys.exit(1)
if failed:
    sys.exit(1)
if refused:
    print("MS_SKIP refused:", "; ".join(refused))
    sys.exit(77)
print(f"{count} examples compile and run")
