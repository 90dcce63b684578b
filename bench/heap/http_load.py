# SPDX-License-Identifier: MIT
"""http_load.py REQUESTS: a server under load, for `memspace bench heap` (case http_server).

Starts `python3 -m http.server 0 --bind 127.0.0.1` (loopback only, an ephemeral port) on a temporary directory
of 16 files of 1 KiB to 256 KiB, then makes REQUESTS GET requests from this process, one connection each
(the server starts a thread per connection), and stops the server. Both processes run under whatever
allocator is preloaded. Bounded in count and in time: past 60 s it stops and exits 1 (no figure). Prints the
number of requests and the bytes received, the same under every allocator."""
import http.client
import os
import re
import subprocess
import sys
import tempfile
import time


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 400
    deadline = time.monotonic() + 60
    with tempfile.TemporaryDirectory(prefix="memspace-http-") as d:
        names = []
        for i in range(16):
            name = f"f{i}.bin"
            with open(os.path.join(d, name), "wb") as f:
                f.write(bytes((i * 31 + j) & 255 for j in range(256)) * (4 << (i % 7)))
            names.append(name)
        srv = subprocess.Popen([sys.executable, "-u", "-m", "http.server", "0", "--bind", "127.0.0.1",
                                "--directory", d], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            m = re.search(r"port (\d+)", srv.stdout.readline())
            if not m:
                return 1
            port = int(m.group(1))
            total = 0
            for i in range(n):
                if time.monotonic() > deadline:
                    print("http_load: past the time bound", file=sys.stderr)
                    return 1
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
                c.request("GET", "/" + names[i % len(names)])
                r = c.getresponse()
                body = r.read()
                c.close()
                if r.status != 200:
                    return 1
                total += len(body)
            print(f"requests {n}\nbytes {total}")
        finally:
            srv.terminate()
            srv.wait(timeout=10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
