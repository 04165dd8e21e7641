"""What the two generated-client scenarios share: the arguments, the step and check helpers,
the albums they add and the answers they expect. Each scenario (scenario.py for
openapi-python-client, scenario_openapi_generator.py for openapi-generator's `python`) walks
the same steps in the order listed in STEPS, through its own generated client alone.
"""
import sys

# The steps both scenarios take, in order (each prints "ok: ..." once it passed).
STEPS = [
    "add albums",
    "walk every page with cursors under every sort",
    "add at an index and get it by index",
    "a conditional GET answered 304 (album and list)",
    "patch with If-Match; a stale tag is 412",
    "a 422 decoded as ValidationProblem",
    "delete, then undo",
    "the tutorial's POST /api/deleteAlbum (an object and a bare number)",
    "settings with the token; a wrong token is 401",
    "the change feed; a since ahead of it is 400",
    "a cover fetched from the upstream",
    "a batch: an add, its patch by ref and a refused move; one undo takes it back",
    "a batch that moves an album to another library; one undo takes it back",
    "a read key made with the admin token: it reads, a write is 403, deleted it is 401 (who-am-I)",
]

# Albums to page through (years out of order so each sort differs from position order).
TITLES = ["Album %02d" % n for n in range(13)]
ALBUMS = [(title, "Artist %d" % (n % 4), 1990 + (n * 7) % 13) for n, title in enumerate(TITLES)]
SORTS = ["position", "-position", "title", "-title", "artist", "-artist", "year", "-year", "createdAt", "-createdAt"]
PAGE = 4
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def arguments(usage):
    """BASE_URL TOKEN COVER_URL from the command line."""
    if len(sys.argv) != 4:
        raise SystemExit("usage: " + usage)
    return sys.argv[1:4]


def step(text):
    print("ok:", text, flush=True)


def check(condition, text):
    if not condition:
        raise SystemExit("FAILED: " + text)


def check_walk(sort, seen, pages):
    """A walk under one sort saw every album once, in 4 pages of 4, in order under `position`."""
    check(sorted(seen) == sorted(TITLES) and len(seen) == len(TITLES), "walk under %s saw %r" % (sort, seen))
    check(pages == (len(TITLES) + PAGE - 1) // PAGE, "13 albums in pages of 4 are 4 pages under %s, got %d" % (sort, pages))
    if sort == "position":
        check(seen == TITLES, "position order: %r" % seen)


def check_feed(kinds):
    check(kinds.count("added") >= 15 and "deleted" in kinds and "updated" in kinds, "feed kinds: %r" % kinds)


def passed():
    print("scenario passed", flush=True)
