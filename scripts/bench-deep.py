#!/usr/bin/env python3
"""Deep-page latency client for scripts/bench (scenario deep-pages).

  bench-deep.py HOST PORT [--sorts position,-position,...] [--walk-limit 500] [--walk-pages 1000]
                [--samples 50] [--limit 50] [--path /albums]

--path: the list to walk (default /albums; /views/all/albums for a composite view).
Per sort S, on one keep-alive connection: walks cursors from GET /albums?limit=<walk-limit>&sort=S
following the body's `next` <walk-pages> times (to album offset walk-limit * walk-pages), then
times <samples> cold first pages (GET /albums?limit=<limit>&sort=S&nc=<i>) and <samples> cold
deep pages (cursor from the walk, then each response's `next`, every request with &nc=<i>).
`nc` is a cache-busting dummy parameter: the page cache is keyed by the raw query string.
Every request must answer 200 with `limit` albums. Prints one TSV line per sort:
  sort  first_p50  first_p99  deep_p50  deep_p99  ratio_p50  walk_s  deep_offset  errors  first_error
(times in ms; ratio_p50 = deep p50 / first p50).
"""
import argparse, http.client, json, statistics, sys, time, urllib.parse

def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, int(round(p / 100.0 * len(xs) + 0.5)) - 1))]

class Client:
    def __init__(self, host, port):
        self.host, self.port = host, port
        self.conn = http.client.HTTPConnection(host, port, timeout=60)
    def get(self, path):
        for attempt in (0, 1):
            try:
                t0 = time.perf_counter()
                self.conn.request("GET", path)
                r = self.conn.getresponse()
                body = r.read()
                return r.status, body, (time.perf_counter() - t0) * 1000.0
            except (http.client.HTTPException, OSError):
                if attempt: raise
                self.conn.close()
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=60)

def next_path(nxt, base):
    """`next` may be a cursor token, a path (+query) or a full URL."""
    if nxt.startswith("http://") or nxt.startswith("https://"):
        u = urllib.parse.urlsplit(nxt)
        return u.path + ("?" + u.query if u.query else "")
    if nxt.startswith("/") or nxt.startswith("?"):
        return (base.split("?")[0] + nxt) if nxt.startswith("?") else nxt
    return base + "&cursor=" + urllib.parse.quote(nxt, safe="")

def items_of(doc):
    for k in ("items", "albums", "data", "results"):
        if isinstance(doc.get(k), list): return doc[k]
    return None

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("host"); ap.add_argument("port", type=int)
    ap.add_argument("--sorts", default="position,title,artist,year,createdAt,-position,-title,-artist,-year,-createdAt")
    ap.add_argument("--walk-limit", type=int, default=500)
    ap.add_argument("--walk-pages", type=int, default=1000)
    ap.add_argument("--samples", type=int, default=50)
    ap.add_argument("--limit", type=int, default=50)
    ap.add_argument("--path", default="/albums")
    a = ap.parse_args()
    c = Client(a.host, a.port)
    nc = int(time.time() * 1000) % 10**9   # unique across runs on the same server too
    for sort in a.sorts.split(","):
        errors, first_err = 0, ""
        def bad(msg):
            nonlocal errors, first_err
            errors += 1
            if not first_err: first_err = msg
        # walk to offset walk_limit * walk_pages
        t0 = time.perf_counter()
        base = "%s?limit=%d&sort=%s" % (a.path, a.walk_limit, urllib.parse.quote(sort, safe=""))
        path, nxt, offset = base, None, 0
        for _ in range(a.walk_pages):
            st, body, _ms = c.get(path)
            if st != 200: bad("walk %s -> %d" % (path, st)); break
            doc = json.loads(body); items = items_of(doc)
            offset += len(items) if items is not None else a.walk_limit
            nxt = doc.get("next")
            if not nxt: bad("walk ended at offset %d (no next)" % offset); break
            path = next_path(nxt, base)
        walk_s = time.perf_counter() - t0
        # cold first pages
        fbase = "%s?limit=%d&sort=%s" % (a.path, a.limit, urllib.parse.quote(sort, safe=""))
        first = []
        for i in range(a.samples):
            nc += 1
            st, body, ms = c.get("%s&nc=%d" % (fbase, nc))
            if st != 200: bad("first -> %d" % st); continue
            items = items_of(json.loads(body))
            if items is not None and len(items) != a.limit: bad("first page has %d albums" % len(items))
            first.append(ms)
        # cold deep pages: the walk's cursor, then each response's next, every request with &nc
        deep = []
        dpath = next_path(nxt, fbase) if nxt else None
        if dpath is not None and "limit=%d&" % a.walk_limit in dpath + "&":
            dpath = dpath.replace("limit=%d" % a.walk_limit, "limit=%d" % a.limit)
        for i in range(a.samples):
            if dpath is None: break
            nc += 1
            st, body, ms = c.get("%s&nc=%d" % (dpath, nc))
            if st != 200: bad("deep %s -> %d" % (dpath, st)); break
            doc = json.loads(body); items = items_of(doc)
            if items is not None and len(items) != a.limit: bad("deep page has %d albums" % len(items))
            deep.append(ms)
            n2 = doc.get("next")
            dpath = next_path(n2, fbase) if n2 else None
        nan = float("nan")
        f50 = statistics.median(first) if first else nan; f99 = pct(first, 99) if first else nan
        d50 = statistics.median(deep) if deep else nan; d99 = pct(deep, 99) if deep else nan
        ratio = d50 / f50 if first and deep and f50 > 0 else nan
        print("%s\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.1f\t%d\t%d\t%s" % (
            sort, f50, f99, d50, d99, ratio, walk_s, offset, errors, first_err.replace("\t", " ").replace(" ", "_")), flush=True)
        print("deep-pages %s: walk to offset %d in %.1f s; first p50 %.2f ms, deep p50 %.2f ms (x%.2f), errors %d %s" % (
            sort, offset, walk_s, f50, d50, ratio, errors, first_err), file=sys.stderr, flush=True)

main()
