#!/usr/bin/env python3
"""Search at a million albums: `scripts/bench --scenario search-1m`.

    python3 scripts/bench-search.py --bin BIN [--dir .bench/search] [--albums 1000000]
        [--samples 50] [--cpu-server 1] [--cpu-clients 0] [--reimport] [--postgres URL]

Data (made once, kept in DIR/data with a marker; --reimport makes it again): the default
library holds the generated archive of `scripts/bench --dataset 1m` (.bench/archive-1000000.json,
made by scripts/bench-dataset.py when missing), imported with PUT /archive.

Queries, picked from the stored search text of every 50th album (so they are words albums
really have), --samples of each kind, every one distinct where the data allows:
  common   one word held by at least 1% of the sample
  two      two words of one album, each held by at least 0.2% ("dark moon")
  prefix   a common word's first three letters ("mid": what a search box sends as one types)
  rare     a word held by at most two albums of the sample (about 100 of the million; the
           generated titles have few words, so these are mostly years)
  none     a word no album holds
Each is asked as GET /albums?q=<q>&limit=50&nc=<n> on one keep-alive connection (`nc` only
defeats the server's page cache: every request is read from the database) and then with
&count=true. Every answer must be 200. The reference, in the same run on the same file: SQLite
itself (Python's sqlite3, read-only) answering the same query through the same FTS5 index, the
first 50 matching rows with their columns (`SELECT ... FROM albums_search JOIN albums ... WHERE
albums_search MATCH ? LIMIT 50`, in the index's order, no sort).

--postgres URL (e.g. "$(scripts/postgres)"): the same on PostgreSQL. The archive is imported
once into that database (server data dir DIR/data-pg, marker DIR/postgres-marker), then
ANALYZE; the queries are still picked from the SQLite copy. The reference is PostgreSQL itself
answering the same GIN query for the first 50 rows (`pgbench -n -c 1 -T 3`, one script per
query, latencies from its per-transaction log), on the cores of --cpu-clients.

Printed: per kind, the median number of matches, the server's p50/p99 (ms) for the first page
(by relevance, and by title) and for count=true, SQLite's p50/p99 and the ratio of p50s, and
PASS or FAIL for the target (the first page by relevance, the default with q: p50 < 5 ms and
p99 < 20 ms); the title sort's figures against the same bounds are stated on a line of their
own. A JSON line with every figure goes to DIR/results.jsonl.
"""
import http.client
import json
import os
import random
import sqlite3
import subprocess
import sys
import time
import urllib.parse

import benchlib
from benchlib import percentile, put_file


def arg(name, default, cast=str):
    if name in sys.argv:
        return cast(sys.argv[sys.argv.index(name) + 1])
    return default


BIN = arg("--bin", os.path.join(benchlib.REPO, ".build/release/bluelibrary"))
DIR = os.path.abspath(arg("--dir", os.path.join(benchlib.REPO, ".bench/search")))
ALBUMS = arg("--albums", 1000000, int)
SAMPLES = arg("--samples", 50, int)
CPU_SERVER = arg("--cpu-server", "1")
CPU_CLIENTS = arg("--cpu-clients", "0")
POSTGRES = arg("--postgres", None)
DATA = os.path.join(DIR, "data")
MARKER = os.path.join(DATA, ".bench-search")
PG_DATA = os.path.join(DIR, "data-pg")
PG_MARKER = os.path.join(DIR, "postgres-marker")
KINDS = ["common", "two", "prefix", "rare", "none"]


def log(msg):
    print("[bench-search] " + msg, file=sys.stderr, flush=True)


def prepare(data, marker, want, log_name, env=None, after=None):
    """The archive imported once into a server on DATA (kept while MARKER says WANT)."""
    if "--reimport" not in sys.argv and os.path.exists(marker) and open(marker).read().strip() == want:
        return
    subprocess.run(["rm", "-rf", data], check=True)
    os.makedirs(data)
    path = benchlib.archive(ALBUMS, CPU_CLIENTS, say=log)
    server = benchlib.Server(BIN, data, CPU_SERVER, os.path.join(DIR, log_name), env=env, say=log)
    try:
        log("importing %d albums (%s)" % (ALBUMS, want))
        t0 = time.time()
        put_file(server.port, "/archive", path)
        log("imported in %.1f s" % (time.time() - t0))
    finally:
        server.stop()
    if after:
        after()
    with open(marker, "w") as f:
        f.write(want + "\n")


def postgres_bin(name):
    for version in sorted(os.listdir("/usr/lib/postgresql"), key=lambda v: -int(v) if v.isdigit() else 0):
        path = "/usr/lib/postgresql/%s/bin/%s" % (version, name)
        if os.path.exists(path):
            return path
    raise SystemExit("%s not found (Debian's postgresql package; scripts/postgres installs it)" % name)


def tsquery(q):
    """PostgreSQL's tsquery for `q` (the server's rule: every word in either form, plain or a
    genre's `_` form, the last a prefix)."""
    words = q.split(" ")
    return " & ".join(["('%s' | '_%s')" % (w, w) for w in words[:-1]] + ["('%s':* | '_%s':*)" % (words[-1], words[-1])])


def index_expression():
    """The GIN index's expression, as PostgreSQL states it (the reference asks the index the
    server's statements ask, whatever its exact text)."""
    definition = subprocess.run([postgres_bin("psql"), "-Atq", "-c", "SELECT pg_get_indexdef('albums_search'::regclass)", POSTGRES],
                                check=True, capture_output=True, text=True).stdout.strip()
    # One line: the words of PostgreSQL's layout one space apart (its literals hold single spaces).
    return " ".join(definition[definition.index("USING gin (") + len("USING gin ("):-1].split())


def pgbench(queries, tag):
    """Latencies (ms) of PostgreSQL answering each query's first 50 rows, from pgbench's log."""
    scripts = []
    expression = index_expression().replace("search_text", "a.search_text")
    for i, q in enumerate(queries):
        path = os.path.join(DIR, "pgbench-%s-%d.sql" % (tag, i))
        with open(path, "w") as f:
            f.write("SELECT a.album_id, a.title, a.artist, a.genre, a.year, a.cover_url, a.created_at, a.updated_at "
                    "FROM albums AS a WHERE a.library = (SELECT id FROM libraries WHERE name = 'default') "
                    "AND %s @@ '%s'::tsquery LIMIT 50;\n"
                    % (expression, tsquery(q).replace("'", "''")))
        scripts += ["-f", path]
    prefix = os.path.join(DIR, "pgbench-log-" + tag)
    for old in os.listdir(DIR):
        if old.startswith("pgbench-log-" + tag):
            os.remove(os.path.join(DIR, old))
    subprocess.run(["taskset", "-c", CPU_CLIENTS, postgres_bin("pgbench"), "-n", "-c", "1", "-T", "3", "-l",
                    "--log-prefix", prefix] + scripts + [POSTGRES], check=True, stdout=subprocess.DEVNULL)
    latencies = []
    for name in os.listdir(DIR):
        if name.startswith("pgbench-log-" + tag):
            with open(os.path.join(DIR, name)) as f:
                latencies += [int(line.split()[2]) / 1000.0 for line in f if line.strip()]
    return latencies


def pick_queries(database):
    """SAMPLES queries of each kind, from the search text of every 50th album."""
    # The words of each document (the field marks `|` and `/` left out).
    documents = [[t for t in row[0].split(" ") if t not in ("|", "/")]
                 for row in database.execute("SELECT search_text FROM albums WHERE row % 50 = 0")]
    frequency = {}
    for tokens in documents:
        for token in set(tokens):
            frequency[token] = frequency.get(token, 0) + 1
    total = len(documents)
    rng = random.Random(7)
    common = sorted(t for t, n in frequency.items() if n >= total * 0.01 and len(t) >= 3)
    fairly = {t for t, n in frequency.items() if n >= total * 0.002}
    least = min(frequency.values())
    rare = sorted(t for t, n in frequency.items() if n <= max(2, least))
    pairs = sorted({(a, b) for tokens in documents[:20000] for a in tokens for b in tokens
                    if a < b and a in fairly and b in fairly and len(a) >= 3 and len(b) >= 3})

    def draw(items, n):
        items = list(items)
        rng.shuffle(items)
        return [items[i % len(items)] for i in range(n)] if items else []

    return {
        "common": draw(common, SAMPLES),
        "two": [a + " " + b for a, b in draw(pairs, SAMPLES)],
        "prefix": [t[:3] for t in draw(common, SAMPLES)],
        "rare": draw(rare, SAMPLES),
        "none": ["zq%dxv" % i for i in range(SAMPLES)],
    }


def fts_query(q):
    """SQLite's FTS5 query for `q` (the server's rule: every word a token, the last a prefix)."""
    words = q.split(" ")
    return " ".join(['"%s"' % w for w in words[:-1]] + ['"%s"*' % words[-1]])


def main():
    os.makedirs(DIR, exist_ok=True)
    prepare(DATA, MARKER, "albums=%d" % ALBUMS, "server-prepare.log")
    database = sqlite3.connect("file:%s?mode=ro" % os.path.join(DATA, "bluelibrary.sqlite"), uri=True)
    queries = pick_queries(database)
    if POSTGRES:
        prepare(PG_DATA, PG_MARKER, "albums=%d url=%s" % (ALBUMS, POSTGRES), "server-prepare-pg.log",
                env={"BLUELIBRARY_DATABASE_URL": POSTGRES},
                after=lambda: subprocess.run([postgres_bin("psql"), "-q", "-c", "ANALYZE", POSTGRES], check=True))
        server = benchlib.Server(BIN, PG_DATA, CPU_SERVER, os.path.join(DIR, "server-run-pg.log"),
                                 env={"BLUELIBRARY_DATABASE_URL": POSTGRES}, say=log)
    else:
        server = benchlib.Server(BIN, DATA, CPU_SERVER, os.path.join(DIR, "server-run.log"), say=log)
    os.sched_setaffinity(0, {int(c) for c in CPU_CLIENTS.split(",")})
    rows = []
    try:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
        n = 0
        errors = []

        def get(path):
            nonlocal n, conn
            n += 1
            t0 = time.perf_counter()
            conn.request("GET", path + "&nc=%d" % n)
            response = conn.getresponse()
            body = response.read()
            elapsed = (time.perf_counter() - t0) * 1000
            if response.status != 200:
                errors.append("%s -> %d %s" % (path, response.status, body[:200]))
            return elapsed, body

        get("/albums?limit=1")  # the connection and the server warm
        for kind in KINDS:
            first, by_title, counted, reference, matches = [], [], [], [], []
            for q in queries[kind]:
                quoted = urllib.parse.quote(q)
                elapsed, _ = get("/albums?limit=50&q=" + quoted)  # sorted by relevance, the default with q
                first.append(elapsed)
                elapsed, _ = get("/albums?limit=50&sort=title&q=" + quoted)
                by_title.append(elapsed)
                elapsed, body = get("/albums?limit=1&count=true&q=" + quoted)
                counted.append(elapsed)
                try:
                    matches.append(json.loads(body).get("total", -1))
                except ValueError:
                    matches.append(-1)
                if POSTGRES:
                    continue
                t0 = time.perf_counter()
                database.execute(
                    "SELECT a.album_id, a.title, a.artist, a.genre, a.year, a.cover_url, a.created_at, a.updated_at "
                    "FROM albums_search CROSS JOIN albums AS a ON a.row = albums_search.rowid "
                    "WHERE albums_search MATCH ? AND a.library = 1 LIMIT 50", (fts_query(q),)).fetchall()
                reference.append((time.perf_counter() - t0) * 1000)
            if POSTGRES:
                reference = pgbench(queries[kind], kind)
            rows.append({
                "kind": kind, "queries": len(queries[kind]), "example": queries[kind][0] if queries[kind] else "",
                "matches_p50": percentile(matches, 50) if matches else 0,
                "first_p50": percentile(first, 50), "first_p99": percentile(first, 99),
                "title_p50": percentile(by_title, 50), "title_p99": percentile(by_title, 99),
                "count_p50": percentile(counted, 50), "count_p99": percentile(counted, 99),
                "sqlite_p50": percentile(reference, 50), "sqlite_p99": percentile(reference, 99),
            })
    finally:
        server.stop()
    engine = "postgres" if POSTGRES else "sqlite"
    print("search-%s on %s  (first page of 50 by relevance, the default with q, and by title; count=true; %s)" % (
        "1m" if ALBUMS == 1000000 else str(ALBUMS), engine,
        "PostgreSQL: the same GIN query, pgbench" if POSTGRES else "SQLite: its FTS5 query on the same file"))
    print("%-7s %-24s %9s %9s %9s %9s %9s %9s %9s %9s %9s %7s  %s" % (
        "kind", "example", "matches", "p50 ms", "p99 ms", "title p50", "title p99", "count p50", "count p99",
        engine[:6] + " p50", engine[:6] + " p99", "x p50", "target"))
    for r in rows:
        # The target is the issue's: the first page with q (by relevance, the default). The
        # title sort's figures are stated beside it, and its own verdict printed below.
        ok = r["first_p50"] < 5 and r["first_p99"] < 20
        ratio = r["first_p50"] / r["sqlite_p50"] if r["sqlite_p50"] > 0 else float("nan")
        print("%-7s %-24s %9d %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f %7.1f  %s" % (
            r["kind"], r["example"][:24], r["matches_p50"], r["first_p50"], r["first_p99"], r["title_p50"], r["title_p99"],
            r["count_p50"], r["count_p99"], r["sqlite_p50"], r["sqlite_p99"], ratio,
            "PASS" if ok else "FAIL (p50 < 5 ms, p99 < 20 ms)"))
    slow_titles = [r["kind"] for r in rows if not (r["title_p50"] < 5 and r["title_p99"] < 20)]
    print("by title (stated, no target of its own): %s" % (
        "p50 < 5 ms and p99 < 20 ms for every kind" if not slow_titles else "over p50 5 ms or p99 20 ms: " + ", ".join(slow_titles)))
    if errors:
        print("errors (%d): %s" % (len(errors), errors[:3]))
    with open(os.path.join(DIR, "results.jsonl"), "a") as f:
        f.write(json.dumps({"time": time.time(), "engine": engine, "albums": ALBUMS, "rows": rows, "errors": len(errors)}) + "\n")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
