#!/usr/bin/env python3
"""Helpers for the cover scenarios of scripts/bench (`cover`, `cover-cold`). Standard library only.

  bench-covers.py gen PATH BYTES
      Write a deterministic file of BYTES bytes that starts with the PNG signature
      (\\x89PNG\\r\\n\\x1a\\n) followed by pseudo-random bytes: the server only sniffs the signature.
  bench-covers.py create HOST PORT N URL_TEMPLATE IDS_OUT [--threads 8]
      POST /albums N times with coverUrl = URL_TEMPLATE % i (i = 0..N-1), keep-alive, write the
      ids (one a line, in order of i) to IDS_OUT. Prints "<seconds> <albums>".
  bench-covers.py fetch HOST PORT IDS_FILE EXPECTED_FILE [--connections 64]
      GET /albums/{id}/cover once for every id, from CONNECTIONS keep-alive connections
      (one thread each, sharing one work queue), and check every 200 body is byte-identical to
      EXPECTED_FILE. Prints one tab-separated line:
        wall_s  requests  ok  bad  p50_ms  p99_ms  max_ms  statuses  first_error
      wall_s runs from the moment all connections are open to the last response.
  bench-covers.py sizes HOST PORT IDS_FILE SIZE [--accept image/jpeg]
      GET /albums/{id}/cover?size=SIZE once for every id, one at a time on one keep-alive
      connection (each a variant not made yet, its original already cached: the time is the
      variant's creation plus one local round trip). Prints: requests ok p50_ms p99_ms bytes
      (bytes: the sum of the 200 bodies).
  bench-covers.py upstream LOG OFFSET PREFIX
      Read the nginx access log (format: $msec $request_time $connection $connection_requests
      $status $body_bytes_sent $request_uri) from byte OFFSET, keep the lines whose URI starts
      with PREFIX, and print one tab-separated line:
        fetches  distinct_uris  max_concurrent  req_lower  req_upper  conn_upper  connections
        p50_ms  p99_ms  statuses
      nginx's clock has 1 ms resolution ($msec and $request_time), and a 100 KiB response on
      loopback takes well under 1 ms, so the overlap of request intervals is only known within
      bounds. A request's true interval lies inside [start, end + 1 ms) and contains
      [start + 1 ms, end) (start = $msec - $request_time, end = $msec), so
        req_lower: largest overlap of the sure parts [start + 1 ms, end) -- a LOWER bound;
        req_upper: largest overlap of [start, end + 1 ms) -- an UPPER bound, inflated when many
          short requests end within the same millisecond;
        conn_upper: largest overlap of the upstream connections' spans [first request start,
          last request end + 1 ms) per $connection. One HTTP/1.1 connection carries one request
          at a time, so this is also an UPPER bound (tight when the fetcher keeps its
          connections alive, inflated if it opens a new connection per fetch);
        max_concurrent = min(req_upper, conn_upper): the bound the target is checked against.
"""
import hashlib
import http.client
import json
import queue
import random
import sys
import threading
import time


def gen(path, size):
    size = int(size)
    sig = b"\x89PNG\r\n\x1a\n"
    rnd = random.Random(20261130)
    body = sig + bytes(rnd.getrandbits(8) for _ in range(size - len(sig)))
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(body)
    import os
    os.replace(tmp, path)


def _conn(host, port):
    c = http.client.HTTPConnection(host, int(port), timeout=60)
    c.connect()
    return c


def create(host, port, n, template, out, threads=8):
    n = int(n)
    ids = [None] * n
    work = queue.Queue()
    for i in range(n):
        work.put(i)
    errors = []

    def worker():
        c = _conn(host, port)
        while True:
            try:
                i = work.get_nowait()
            except queue.Empty:
                break
            body = json.dumps({"title": "Bench cover %d" % i, "artist": "Bench", "coverUrl": template % i})
            for attempt in range(3):
                try:
                    c.request("POST", "/albums", body=body, headers={"Content-Type": "application/json"})
                    r = c.getresponse()
                    data = r.read()
                    break
                except (http.client.HTTPException, OSError):
                    c.close()
                    c = _conn(host, port)
            else:
                errors.append("album %d: connection failed" % i)
                continue
            if r.status != 201:
                errors.append("album %d: POST /albums answered %d: %s" % (i, r.status, data[:300]))
                continue
            j = json.loads(data)
            ids[i] = j.get("id") or j.get("album", {}).get("id")
        c.close()

    t0 = time.monotonic()
    ts = [threading.Thread(target=worker) for _ in range(int(threads))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    secs = time.monotonic() - t0
    if errors or any(i is None for i in ids):
        sys.stderr.write("\n".join(errors[:10] or ["some albums got no id"]) + "\n")
        sys.exit(1)
    with open(out, "w") as f:
        f.write("\n".join(ids) + "\n")
    print("%.3f %d" % (secs, n))


def _pct(xs, p):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))]


def fetch(host, port, ids_file, expected_file, connections=64):
    ids = [l.strip() for l in open(ids_file) if l.strip()]
    expected = open(expected_file, "rb").read()
    want = hashlib.sha256(expected).digest()
    work = queue.Queue()
    for i in ids:
        work.put(i)
    lat, statuses, errors = [], {}, []
    lock = threading.Lock()
    conns = [_conn(host, port) for _ in range(int(connections))]
    start = threading.Barrier(len(conns) + 1)
    last_end = [0.0]

    def worker(c):
        start.wait()
        while True:
            try:
                i = work.get_nowait()
            except queue.Empty:
                break
            t0 = time.monotonic()
            err = None
            try:
                c.request("GET", "/albums/%s/cover" % i)
                r = c.getresponse()
                data = r.read()
                status = r.status
                if status == 200 and hashlib.sha256(data).digest() != want:
                    err = "album %s: 200 but the body differs from the upstream file (%d bytes, expected %d)" % (
                        i, len(data), len(expected))
                    status = "200-mismatch"
                elif status != 200:
                    err = "album %s: %d %s" % (i, status, data[:300].decode("utf-8", "replace"))
                if r.getheader("Connection", "").lower() == "close":
                    c.close()
                    c = _conn(host, port)
            except (http.client.HTTPException, OSError) as e:
                status = "conn-error"
                err = "album %s: %r" % (i, e)
                c.close()
                c = _conn(host, port)
            t1 = time.monotonic()
            with lock:
                lat.append((t1 - t0) * 1000.0)
                statuses[status] = statuses.get(status, 0) + 1
                if err:
                    errors.append(err)
                last_end[0] = max(last_end[0], t1)
        c.close()

    ts = [threading.Thread(target=worker, args=(c,)) for c in conns]
    for t in ts:
        t.start()
    start.wait()
    t0 = time.monotonic()
    for t in ts:
        t.join()
    wall = last_end[0] - t0
    ok = statuses.get(200, 0)
    st = ",".join("%s:%d" % (k, v) for k, v in sorted(statuses.items(), key=lambda kv: str(kv[0])))
    print("\t".join([
        "%.3f" % wall, str(len(lat)), str(ok), str(len(lat) - ok),
        "%.3f" % _pct(lat, 50), "%.3f" % _pct(lat, 99), "%.3f" % max(lat or [float("nan")]),
        st, (errors[0] if errors else "").replace("\t", " ").replace("\n", " ")]))


def _max_overlap(intervals):
    """Largest number of closed-open intervals [a, b) covering one instant."""
    ev = []
    for a, b in intervals:
        ev.append((a, 1))
        ev.append((b, -1))
    ev.sort(key=lambda e: (e[0], e[1]))   # ends before starts at the same time
    cur = best = 0
    for _, d in ev:
        cur += d
        best = max(best, cur)
    return best


def upstream(log, offset, prefix):
    with open(log, "rb") as f:
        f.seek(int(offset))
        lines = f.read().decode("utf-8", "replace").splitlines()
    reqs, spans, statuses, uris, rts = [], {}, {}, set(), []
    for line in lines:
        p = line.split()
        if len(p) < 7 or not p[6].startswith(prefix):
            continue
        # integer milliseconds: nginx's resolution, and no float ties at the boundaries
        end, rt, conn, status = round(float(p[0]) * 1000), round(float(p[1]) * 1000), p[2], p[4]
        start = end - rt
        reqs.append((start, end))
        s = spans.get(conn)
        spans[conn] = (min(s[0], start), max(s[1], end)) if s else (start, end)
        statuses[status] = statuses.get(status, 0) + 1
        uris.add(p[6])
        rts.append(float(rt))
    ms = 1
    req_lower = _max_overlap([(a + ms, b) for a, b in reqs if b > a + ms])
    req_upper = _max_overlap([(a, b + ms) for a, b in reqs])
    conn_upper = _max_overlap([(a, b + ms) for a, b in spans.values()])
    print("\t".join([
        str(len(reqs)), str(len(uris)), str(min(req_upper, conn_upper)), str(req_lower), str(req_upper),
        str(conn_upper), str(len(spans)), "%.3f" % _pct(rts, 50), "%.3f" % _pct(rts, 99),
        ",".join("%s:%d" % kv for kv in sorted(statuses.items())) or "-"]))

def sizes(host, port, ids_file, size, accept="image/jpeg"):
    ids = [line.strip() for line in open(ids_file) if line.strip()]
    c = _conn(host, port)
    times, ok, total = [], 0, 0
    for album in ids:
        t0 = time.monotonic()
        c.request("GET", "/albums/%s/cover?size=%s" % (album, size), headers={"Accept": accept})
        r = c.getresponse()
        body = r.read()
        times.append((time.monotonic() - t0) * 1000)
        if r.status == 200:
            ok += 1
            total += len(body)
        else:
            sys.stderr.write("album %s: %d %s\n" % (album, r.status, body[:200]))
    c.close()
    print("%d\t%d\t%.2f\t%.2f\t%d" % (len(ids), ok, _pct(times, 50), _pct(times, 99), total))


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    opts = {}
    while args and args[-2:-1] and args[-2].startswith("--"):
        opts[args[-2][2:]] = args[-1]
        args = args[:-2]
    {"gen": gen, "create": create, "fetch": fetch, "upstream": upstream, "sizes": sizes}[cmd](*args, **opts)
