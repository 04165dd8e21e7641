#!/usr/bin/env python3
"""SQLite's own time for what `PUT /archive` stores: the reference of scripts/bench's
import-<size> scenarios.

    scripts/bench-import-reference.py SERVER_DB WORK_DIR [--repeat N]

SERVER_DB is the database a `PUT /archive` just filled (read only, never changed). Its album
rows and bucket rows are read into memory first (not timed), in list order, exactly as the
server stored them. Then, N times, into a fresh database WORK_DIR/reference.db:

  - the albums and buckets tables and the albums_by_position index are created from the
    server's own `CREATE` statements (sqlite_master), so the schema is the server's;
  - timed: BEGIN; every album row inserted with one prepared INSERT (executemany, the same
    fifteen values the server binds per row, the search text and sort keys read from the
    server's rows), the bucket rows likewise; the six indexes the server rebuilds after an
    import created from the server's own statements (albums_by_title_sort,
    albums_by_artist_sort, albums_by_genre_sort, albums_by_year, albums_by_created,
    albums_by_album_id) and the
    search index (FTS5 `albums_search` over the view `albums_search_content`, both created as
    the server's, with the server's settings, filled with one 'rebuild' and merged into one
    segment with 'optimize', as the server does); COMMIT.

Same settings as the server's writer: WAL, synchronous=NORMAL, cache_size 32 MiB, default page
size. No JSON parsing, no validation, no change feed or undo: the floor for the same rows and
indexes in one transaction. Prints one line per run, `seconds cpu-seconds rows` (wall time and
the process's user + system CPU time of the timed part: on a busy machine the CPU time is the
steadier figure), and the medians last as `median <seconds> cpu <cpu-seconds> rows <n>`.
"""
import os
import resource
import sqlite3
import statistics
import sys
import time

INDEXES = ["albums_by_title_sort", "albums_by_artist_sort", "albums_by_genre_sort", "albums_by_year", "albums_by_created",
           "albums_by_album_id"]
COLUMNS = ("library, bucket, pos, album_id, title, artist, genre, year, cover_url, created_at, updated_at, "
           "search_text, title_sort, artist_sort, genre_sort")


def schema(src):
    """The server's CREATE statements: tables first, then the position index, then the six."""
    def sql(name):
        row = src.execute("SELECT sql FROM sqlite_master WHERE name = ?", (name,)).fetchone()
        if row is None:
            sys.exit("bench-import-reference: %s has no %s (not a BlueLibrary database?)" % (SERVER_DB, name))
        return row[0]
    tables = [sql("libraries"), sql("buckets"), sql("albums"), sql("albums_by_position"), sql("albums_search_content"),
              sql("albums_search")]
    # The search index's settings as the server's ('hashsize', 'crisismerge'; not its version).
    settings = src.execute("SELECT k, v FROM albums_search_config WHERE k <> 'version'").fetchall()
    return tables + ["INSERT INTO albums_search (albums_search, rank) VALUES ('%s', %d)" % (k, v) for k, v in settings], \
        [sql(name) for name in INDEXES]


def cpu_seconds():
    """User + system CPU time of this process (and the threads SQLite may start)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run(work, tables, indexes, albums, buckets, libraries):
    path = os.path.join(work, "reference.db")
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.unlink(path + suffix)
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("PRAGMA cache_size=-32768")
    for statement in tables:
        db.execute(statement)
    db.executemany("INSERT INTO libraries (id, name) VALUES (?, ?)", libraries)
    started, cpu = time.perf_counter(), cpu_seconds()
    db.execute("BEGIN")
    db.executemany("INSERT INTO albums (%s) VALUES (%s)" % (COLUMNS, ",".join("?" * 14)), albums)
    db.executemany("INSERT INTO buckets (library, ord, id, size) VALUES (?,?,?,?)", buckets)
    for statement in indexes:
        db.execute(statement)
    db.execute("INSERT INTO albums_search (albums_search) VALUES ('rebuild')")
    db.execute("INSERT INTO albums_search (albums_search) VALUES ('optimize')")
    db.execute("COMMIT")
    elapsed, cpu = time.perf_counter() - started, cpu_seconds() - cpu
    count = db.execute("SELECT count(*) FROM albums").fetchone()[0]
    db.close()
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.unlink(path + suffix)
    return elapsed, cpu, count


def main():
    global SERVER_DB
    args = sys.argv[1:]
    repeat = 1
    if "--repeat" in args:
        i = args.index("--repeat"); repeat = max(1, int(args[i + 1])); del args[i:i + 2]
    if len(args) != 2:
        sys.exit(__doc__)
    SERVER_DB, work = args
    src = sqlite3.connect("file:%s?mode=ro" % SERVER_DB, uri=True)
    tables, indexes = schema(src)
    albums = src.execute("SELECT %s FROM albums ORDER BY row" % COLUMNS).fetchall()
    buckets = src.execute("SELECT library, ord, id, size FROM buckets ORDER BY library, ord").fetchall()
    libraries = src.execute("SELECT id, name FROM libraries").fetchall()
    src.close()
    times, cpus = [], []
    for _ in range(repeat):
        elapsed, cpu, count = run(work, tables, indexes, albums, buckets, libraries)
        if count != len(albums):
            sys.exit("bench-import-reference: stored %d rows of %d" % (count, len(albums)))
        times.append(elapsed)
        cpus.append(cpu)
        print("%.3f %.3f %d" % (elapsed, cpu, count), flush=True)
    print("median %.3f cpu %.3f rows %d" % (statistics.median(times), statistics.median(cpus), len(albums)))


if __name__ == "__main__":
    main()
