# SPDX-License-Identifier: MIT
"""numpy temporaries for `memspace bench heap` (real programs, case python_numpy): arrays of 1-40 MB made and
dropped as an analysis script makes them (a = np.ones(n); b = a * 2.0; c = b + a), six results kept at a time
and replaced at random: large blocks of ever different sizes, the pattern that per-size caches serve badly.
Usage: numpy_churn.py [ROUNDS] (default 150). Prints a checksum, the same under every allocator; exits 3 when
a kept array changed."""
import random
import sys

import numpy as np

rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 150
rng = random.Random(1)
kept = []
total = 0.0
for i in range(rounds):
    n = rng.randint(1 << 17, 5 << 20)  # 1-40 MB of float64
    a = np.ones(n)
    b = a * 2.0
    c = b + a
    c[-1] = i
    total += float(c[0]) + float(c[-1])
    kept.append((c, i))
    if len(kept) > 6:
        k, j = kept.pop(rng.randrange(len(kept)))
        if k[0] != 3.0 or k[-1] != j:
            sys.exit(3)
print(f"{rounds} {total:.1f}")
