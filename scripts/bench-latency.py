#!/usr/bin/env python3
"""Latency of writes: add-at-0 / delete-at-0 for scripts/bench, appends for scripts/bench-writes.

    scripts/bench-latency.py HOST PORT --duration S [--warmup S] [--connections C]
                             [--min-samples N] [--max-seconds S] [--op pair|append]

Each connection (one process per connection, raw keep-alive HTTP/1.1 socket, TCP_NODELAY)
loops, with --op pair (the default): POST /albums {"title":..., "index":0}  then
DELETE /albums/at/0, so the library size is the same at the end as at the start; with
--op append: POST /albums {"title":...} (an append, as scripts/bench-writes' wrk sends), and
the delete line has no samples. A closed loop: each connection sends its next request when the
last answer arrived, so the mean latency must agree with the rate (Little's law:
mean ~ connections / ops_per_s), which a reader can check on the printed line. Every request is timed on its own, from the first byte
sent to the last byte of the response read (time.perf_counter_ns), so add and delete get
separate percentiles. The client overhead (a few tens of microseconds of Python per request)
is included, which only makes the server look slower.

With one connection the client also checks that DELETE /albums/at/0 removed exactly the album
the POST just created (index 0 is the new album): a mismatch is counted as an error.

Prints one tab-separated line per operation:
    op  samples  ops_per_s  p50_ms  p90_ms  p99_ms  max_ms  mean_ms  errors  first_error
"""
import json
import multiprocessing as mp
import socket
import sys
import time


class Client:
    def __init__(self, host, port):
        self.host, self.port = host, port
        self.sock = None
        self.buf = b""

    def connect(self):
        if self.sock:
            self.sock.close()
        self.sock = socket.create_connection((self.host, self.port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def _fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("server closed the connection")
        self.buf += chunk

    def request(self, raw):
        """Send raw request bytes, read one response; returns (status, body, close)."""
        if self.sock is None:
            self.connect()
        self.sock.sendall(raw)
        while b"\r\n\r\n" not in self.buf:
            self._fill()
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        hdrs = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            hdrs[k.strip().lower()] = v.strip()
        if hdrs.get("transfer-encoding", "").lower() == "chunked":
            body = b""
            while True:
                while b"\r\n" not in self.buf:
                    self._fill()
                size_line, self.buf = self.buf.split(b"\r\n", 1)
                size = int(size_line.split(b";")[0], 16)
                while len(self.buf) < size + 2:
                    self._fill()
                body += self.buf[:size]
                self.buf = self.buf[size + 2:]
                if size == 0:
                    break
        else:
            n = int(hdrs.get("content-length", "0"))
            while len(self.buf) < n:
                self._fill()
            body, self.buf = self.buf[:n], self.buf[n:]
        close = hdrs.get("connection", "").lower() == "close"
        if close:
            self.sock.close(); self.sock = None
        return status, body, close


def worker(host, port, warmup, duration, min_samples, max_seconds, check_ids, append, barrier, out):
    c = Client(host, port)
    c.connect()
    hosthdr = "%s:%d" % (host, port)
    delete_raw = ("DELETE /albums/at/0 HTTP/1.1\r\nHost: %s\r\n\r\n" % hosthdr).encode()
    lat = {"add": [], "delete": []}
    errors = {"add": 0, "delete": 0}
    first_error = {"add": "", "delete": ""}
    n = 0

    def add_raw(i):
        album = {"title": "Bench Album %d" % i, "artist": "Bench Artist", "genre": "Rock", "year": 1999}
        if not append:
            album["index"] = 0
        body = json.dumps(album).encode()
        return (("POST /albums HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
                 "Content-Length: %d\r\n\r\n" % (hosthdr, len(body))).encode() + body)

    def one(op, raw, want, record):
        t0 = time.perf_counter_ns()
        try:
            status, body, _ = c.request(raw)
        except (OSError, ConnectionError, ValueError) as e:
            errors[op] += 1
            first_error[op] = first_error[op] or "%s: %s" % (type(e).__name__, e)
            c.connect()
            return None
        dt = time.perf_counter_ns() - t0
        if record:
            lat[op].append(dt)
        if status != want:
            errors[op] += 1
            first_error[op] = first_error[op] or "HTTP %d: %s" % (status, body[:200].decode("utf-8", "replace"))
            return None
        return body

    barrier.wait()
    end_warm = time.monotonic() + warmup
    while time.monotonic() < end_warm:
        one("add", add_raw(n), 201, False)
        if not append:
            one("delete", delete_raw, 200, False)
        n += 1
    for k in errors:
        errors[k] = 0; first_error[k] = ""
    start = time.monotonic()
    end = start + duration
    hard_end = start + max_seconds
    while True:
        now = time.monotonic()
        if now >= hard_end or (now >= end and min(len(lat["add"]), len(lat["add"] if append else lat["delete"])) >= min_samples):
            break
        added = one("add", add_raw(n), 201, True)
        if append:
            n += 1
            continue
        deleted = one("delete", delete_raw, 200, True)
        n += 1
        if check_ids and added is not None and deleted is not None:
            a, d = json.loads(added), json.loads(deleted)
            if a.get("id") != d.get("id") or d.get("index") != 0:
                errors["delete"] += 1
                first_error["delete"] = first_error["delete"] or \
                    "deleted %s (index %s), expected the just-added %s" % (d.get("id"), d.get("index"), a.get("id"))
    out.put((lat, errors, first_error, time.monotonic() - start))


def pct(sorted_ns, p):
    if not sorted_ns:
        return float("nan")
    i = min(len(sorted_ns) - 1, max(0, int(round(p / 100.0 * len(sorted_ns) + 0.5)) - 1))
    return sorted_ns[i] / 1e6


def main():
    a = sys.argv[1:]
    host, port = a[0], int(a[1])
    opts = {"--duration": "5", "--warmup": "1", "--connections": "1", "--min-samples": "50", "--max-seconds": "120", "--op": "pair"}
    i = 2
    while i < len(a):
        if a[i] not in opts:
            sys.exit("unknown option %s\n%s" % (a[i], __doc__))
        opts[a[i]] = a[i + 1]; i += 2
    conns = int(opts["--connections"])
    if opts["--op"] not in ("pair", "append"):
        sys.exit("--op: pair or append\n%s" % __doc__)
    append = opts["--op"] == "append"
    barrier = mp.Barrier(conns)
    out = mp.Queue()
    procs = [mp.Process(target=worker, args=(host, port, float(opts["--warmup"]), float(opts["--duration"]),
                                            int(opts["--min-samples"]), float(opts["--max-seconds"]),
                                            conns == 1 and not append, append, barrier, out)) for _ in range(conns)]
    for p in procs:
        p.start()
    results = [out.get() for _ in procs]
    for p in procs:
        p.join()
    elapsed = max(r[3] for r in results)
    for op in ("add", "delete"):
        lat = sorted(x for r in results for x in r[0][op])
        errs = sum(r[1][op] for r in results)
        first = next((r[2][op] for r in results if r[2][op]), "")
        mean = (sum(lat) / len(lat) / 1e6) if lat else float("nan")
        print("\t".join([op, str(len(lat)), "%.1f" % (len(lat) / elapsed if elapsed else 0),
                         "%.3f" % pct(lat, 50), "%.3f" % pct(lat, 90), "%.3f" % pct(lat, 99),
                         "%.3f" % (lat[-1] / 1e6 if lat else float("nan")), "%.3f" % mean, str(errs),
                         first.replace("\t", " ").replace("\n", " ")]))


if __name__ == "__main__":
    main()
