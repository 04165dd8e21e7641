#!/usr/bin/env python3
"""The cost of an API key on a cached read: GET /albums?limit=50 (the page cache's first page of
1,000 albums) with wrk, alternating rounds on one server so both sides see the same process,
data and caches:

- open: the lock off (`access.passcodeEnabled` false), no Authorization header: one atomic load
  decides;
- key: the lock on with `access.protectReads`, `Authorization: Bearer <read key>` (a key made
  by POST /keys: parsed, looked up, one SHA-256 per request);
- passcode: the same with the passcode (the admin key `token`): a keyed digest per request,
  PBKDF2 once.

Target: key >= 0.95 x open (medians of the rounds). Server on CPU --cpu-server, wrk on
--cpu-clients, one connection per wrk thread as scripts/bench runs its cached-page scenario
(`--connections`, default 64). Prints one table; exits 0 whether or not the target is met (the
table says which).

Usage: bench-keys.py --bin .build/release/bluelibrary [--dir .bench/keys] [--rounds 3]
                     [--seconds 5] [--connections 64] [--cpu-server 1] [--cpu-clients 0]
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

PASSCODE = "bench-keys-passcode-0123"
PATH = "/albums?limit=50"


def wrk(port, seconds, connections, cpu, headers):
    args = ["taskset", "-c", str(cpu), "wrk", "-t2", "-c%d" % connections, "-d%ds" % seconds, "--latency"]
    for header in headers:
        args += ["-H", header]
    out = subprocess.run(args + ["http://127.0.0.1:%d%s" % (port, PATH)], capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s*([\d.]+)", out).group(1))
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if non2xx:
        raise SystemExit("wrk saw %s non-2xx answers:\n%s" % (non2xx.group(1), out))
    return rps


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--dir", default=os.path.join(benchlib.REPO, ".bench", "keys"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--cpu-server", type=int, default=1)
    parser.add_argument("--cpu-clients", type=int, default=0)
    a = parser.parse_args()
    shutil.rmtree(a.dir, ignore_errors=True)
    os.makedirs(a.dir)
    data = os.path.join(a.dir, "data")
    archive = benchlib.archive(1000, a.cpu_clients)
    server = benchlib.Server(a.bin, data, a.cpu_server, os.path.join(a.dir, "server.log"),
                             env={"BLUELIBRARY_TOKEN": PASSCODE, "BLUELIBRARY_EVENT_LOOPS": "1"})
    admin = {"Authorization": "Bearer " + PASSCODE, "Content-Type": "application/json"}
    status, body = benchlib.request(server.port, "PUT", "/archive", body=open(archive, "rb").read(), headers=admin)
    assert status == 200, body[:300]
    status, body = benchlib.request(server.port, "POST", "/keys", body=json.dumps({"name": "bench", "scopes": ["read"]}), headers=admin)
    assert status == 201, body
    key = json.loads(body)["secret"]

    def lock(on):
        document = {"access": {"passcodeEnabled": on, "protectReads": on}}
        status, body = benchlib.request(server.port, "PATCH", "/settings", body=json.dumps(document), headers=admin)
        assert status == 200, body

    sides = {"open": (False, []), "key": (True, ["Authorization: Bearer " + key]),
             "passcode": (True, ["Authorization: Bearer " + PASSCODE])}
    results = {name: [] for name in sides}
    try:
        for _ in range(a.rounds):
            for name, (locked, headers) in sides.items():
                lock(locked)
                status, _ = benchlib.request(server.port, "GET", PATH, headers=dict(h.split(": ", 1) for h in headers))
                assert status == 200, (name, status)
                results[name].append(wrk(server.port, a.seconds, a.connections, a.cpu_clients, headers))
    finally:
        server.stop()
    open_rps = statistics.median(results["open"])
    print("API key on a cached page (GET %s, 1,000 albums; %d rounds of %d s, %d connections, median req/s)"
          % (PATH, a.rounds, a.seconds, a.connections))
    print("| side | req/s (rounds) | median | vs open |")
    print("|---|---|---|---|")
    for name in sides:
        median = statistics.median(results[name])
        print("| %s | %s | %.0f | %.3fx |" % (name, ", ".join("%.0f" % r for r in results[name]), median, median / open_rps))
    ratio = statistics.median(results["key"]) / open_rps
    print("key vs open: %.3fx (target >= 0.95x): %s" % (ratio, "PASS" if ratio >= 0.95 else "FAIL"))


if __name__ == "__main__":
    main()
