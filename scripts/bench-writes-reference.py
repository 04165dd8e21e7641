#!/usr/bin/env python3
"""SQLite itself inserting album rows, the reference of scripts/bench-writes.

    scripts/bench-writes-reference.py TEMPLATE_DB WORK_DIR --synchronous NORMAL|FULL
                                      [--batch 64] [--seconds S]

TEMPLATE_DB is a database the server created (its whole schema: the albums table with its
UNIQUE (library, album_id), the position index, the five sort indexes and the album-id index).
It is copied to WORK_DIR and rows are inserted into its albums table, as an append of the
server does (library 1, bucket 1, increasing positions, a fresh 26-character id, title, artist,
genre, year, created/updated, the genre's sort key; the other keys and the search text are
left NULL), in transactions of --batch rows (BEGIN IMMEDIATE ... COMMIT),
WAL mode with the given synchronous setting and SQLite's default auto-checkpoint, for --seconds
seconds. Nothing else: no bucket counts, no version, no change feed, no undo, no HTTP; that is
the server's own work on top.

Prints one tab-separated line:  rows  seconds  rows_per_s  transactions_per_s  wal_bytes_per_row
(wal_bytes_per_row: pages SQLite wrote to the WAL, from the size the WAL grew to with
checkpoints off for a last, separate 64-transaction sample; a page is 4096 + 24 bytes).
"""
import argparse
import os
import random
import sqlite3
import string
import time

ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


class Rows:
    """Album rows made cheaply (the Python work per row must not be what is measured): titles
    and artists from a pool made beforehand, a unique id per row from a random prefix."""

    def __init__(self, rng):
        self.pool = [("".join(rng.choice(string.ascii_letters) for _ in range(12)),
                      "".join(rng.choice(string.ascii_letters) for _ in range(10))) for _ in range(4096)]
        self.prefix = "".join(rng.choice(ALPHABET) for _ in range(10))
        self.now = int(time.time() * 1000)

    def batch(self, start, count):
        pool, now, prefix = self.pool, self.now, self.prefix
        return [(1, "%s%016d" % (prefix, n), 1, (n + 1) << 20, pool[n & 4095][0], pool[n & 4095][1], "Rock",
                 1960 + n % 60, None, now, now, "rock") for n in range(start, start + count)]


INSERT = ("INSERT INTO albums (library, album_id, bucket, pos, title, artist, genre, year, cover_url, "
          "created_at, updated_at, genre_sort) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")


def open_copy(template, path, synchronous, autocheckpoint=True):
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    source = sqlite3.connect(template)
    db = sqlite3.connect(path, isolation_level=None)
    source.backup(db)  # the committed schema, whether or not it is still in the template's WAL
    source.close()
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=%s" % synchronous)
    if not autocheckpoint:
        db.execute("PRAGMA wal_autocheckpoint=0")
    return db


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("template")
    parser.add_argument("work_dir")
    parser.add_argument("--synchronous", default="NORMAL", choices=["NORMAL", "FULL"])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=5)
    args = parser.parse_args()
    made = Rows(random.Random(7))
    path = os.path.join(args.work_dir, "reference.sqlite")

    db = open_copy(args.template, path, args.synchronous)
    inserted = 0
    transactions = 0
    started = time.perf_counter()
    deadline = started + args.seconds
    while time.perf_counter() < deadline:
        batch = made.batch(inserted, args.batch)
        db.execute("BEGIN IMMEDIATE")
        db.executemany(INSERT, batch)
        db.execute("COMMIT")
        inserted += len(batch)
        transactions += 1
    elapsed = time.perf_counter() - started
    db.close()

    # WAL bytes per row: the same inserts with checkpoints off, so the WAL file's growth is
    # what was written (64 transactions on a fresh copy).
    db = open_copy(args.template, path, args.synchronous, autocheckpoint=False)
    page = db.execute("PRAGMA page_size").fetchone()[0]
    before = os.path.getsize(path + "-wal") if os.path.exists(path + "-wal") else 0
    sample = 0
    for _ in range(64):
        db.execute("BEGIN IMMEDIATE")
        db.executemany(INSERT, made.batch(inserted + sample, args.batch))
        db.execute("COMMIT")
        sample += args.batch
    wal = os.path.getsize(path + "-wal") - before
    frames = wal // (page + 24)
    db.close()
    print("%d\t%.3f\t%.0f\t%.0f\t%.0f" % (inserted, elapsed, inserted / elapsed, transactions / elapsed,
                                           frames * (page + 24) / sample))


if __name__ == "__main__":
    main()
