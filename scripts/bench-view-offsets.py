#!/usr/bin/env python3
"""Deep value-sort offsets on a view of 10 libraries x 100,000 albums: time and server RSS.

    scripts/bench-view-offsets.py BINARY [--port PORT]

The first run makes the archives (scripts/bench-dataset.py, seeds 1-10) and imports them into
/tmp/bench-view-offsets/data (libraries l1..l10, view `all`); later runs reuse them. Each run
starts BINARY fresh on that data, prints its RSS, then for each request of a fixed list its
time and the RSS after it, and the RSS 3 s after the last. A figure, never an assertion.
"""
import json
import os
import subprocess
import sys
import time
import urllib.request

ROOT = "/tmp/bench-view-offsets"
DATA = os.path.join(ROOT, "data")
HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    binary = sys.argv[1]
    port = int(sys.argv[sys.argv.index("--port") + 1]) if "--port" in sys.argv else 18931
    base = f"http://127.0.0.1:{port}"

    def request(method, path, body=None):
        headers = {"Content-Type": "application/json"} if body is not None else {}
        started = time.monotonic()
        with urllib.request.urlopen(urllib.request.Request(base + path, data=body, method=method, headers=headers), timeout=600) as answer:
            data = answer.read()
        return data, time.monotonic() - started

    def rss(pid):
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS"):
                    return int(line.split()[1]) / 1024
        return 0.0

    def start():
        server = subprocess.Popen([binary, "serve", "--port", str(port), "--data-dir", DATA],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(600):
            try:
                request("GET", "/healthz")
                return server
            except OSError:
                time.sleep(0.1)
        server.kill()
        raise SystemExit("the server did not answer")

    os.makedirs(ROOT, exist_ok=True)
    if not os.path.exists(os.path.join(ROOT, "seeded")):
        for number in range(1, 11):
            archive = os.path.join(ROOT, f"a{number}.json")
            if not os.path.exists(archive):
                subprocess.run([sys.executable, os.path.join(HERE, "bench-dataset.py"), "100000", archive, "--seed", str(number)], check=True)
        server = start()
        for number in range(1, 11):
            request("POST", "/libraries", json.dumps({"id": f"l{number}"}).encode())
            with open(os.path.join(ROOT, f"a{number}.json"), "rb") as archive:
                request("PUT", f"/libraries/l{number}/archive", archive.read())
        request("POST", "/views", json.dumps({"id": "all", "sources": [f"l{n}" for n in range(1, 11)]}).encode())
        server.terminate()
        server.wait()
        open(os.path.join(ROOT, "seeded"), "w").close()

    server = start()
    time.sleep(1)
    print(f"fresh RSS {rss(server.pid):.1f} MiB")
    for sort, offset in [("title", 2000000000), ("title", 999990), ("-artist", 500000), ("year", 750000),
                         ("createdAt", 123456), ("title", 2000000000)]:
        body, seconds = request("GET", f"/views/all/albums?sort={sort}&offset={offset}&limit=50")
        items = len(json.loads(body)["items"])
        print(f"sort={sort} offset={offset}: {items} items, {seconds * 1000:.0f} ms, RSS {rss(server.pid):.1f} MiB", flush=True)
    time.sleep(3)
    print(f"3 s later: RSS {rss(server.pid):.1f} MiB")
    server.terminate()
    server.wait()


if __name__ == "__main__":
    main()
