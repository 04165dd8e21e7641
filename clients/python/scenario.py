#!/usr/bin/env python3
"""A client author's tour of BlueLibrary, with only the client that openapi-python-client
generates from openapi.yaml (package `bluelibrary_client`, on PYTHONPATH).

Usage: scenario.py BASE_URL TOKEN COVER_URL

The server must be fresh (an empty `default` library), started with write protection on
(BLUELIBRARY_TOKEN=TOKEN), and allowed to fetch COVER_URL (a PNG). Every call goes through the
generated functions and models; an answer the spec does not list raises (the client is made
with raise_on_unexpected_status). Prints one line per step; exits non-zero on the first failure.
Run by Tests/BlueLibraryServerTests/GeneratedClientTests.swift (see clients/python/generate).
"""
import sys

from bluelibrary_client import AuthenticatedClient
from bluelibrary_client.api.albums import (create_album, delete_album, get_album, get_album_at_index,
                                           get_album_cover, list_albums, update_album)
from bluelibrary_client.api.events import list_changes
from bluelibrary_client.api.settings import get_settings, patch_settings
from bluelibrary_client.api.undo import undo
from bluelibrary_client.models import (AlbumInput, AlbumPage, AlbumPatch, AlbumWithIndex, ChangePage, Problem, Settings,
                                       SettingsPatch, SettingsPatchUndoType0, UndoResult, ValidationProblem)
from bluelibrary_client.types import File

base_url, token, cover_url = sys.argv[1:4]
client = AuthenticatedClient(base_url=base_url, token=token, raise_on_unexpected_status=True)
stranger = AuthenticatedClient(base_url=base_url, token="not-the-token", raise_on_unexpected_status=True)


def step(text):
    print("ok:", text, flush=True)


def check(condition, text):
    if not condition:
        raise SystemExit("FAILED: " + text)


# Albums to page through (years out of order so each sort differs from position order).
titles = ["Album %02d" % n for n in range(13)]
for n, title in enumerate(titles):
    made = create_album.sync(client=client, body=AlbumInput(title=title, artist="Artist %d" % (n % 4), year=1990 + (n * 7) % 13))
    check(isinstance(made, AlbumWithIndex) and made.index == n, "add %s" % title)
step("added %d albums" % len(titles))

# Every page, under every sort, following `next` until it is null.
for sort in ["position", "-position", "title", "-title", "artist", "-artist", "year", "-year", "createdAt", "-createdAt"]:
    seen, cursor, pages = [], None, 0
    while True:
        page = list_albums.sync(client=client, limit=4, sort=sort, **({"cursor": cursor} if cursor else {}))
        check(isinstance(page, AlbumPage), "page under %s: %r" % (sort, page))
        seen += [album.title for album in page.items]
        pages += 1
        if page.next_ is None:
            break
        cursor = page.next_
    check(sorted(seen) == sorted(titles) and len(seen) == len(titles), "walk under %s saw %r" % (sort, seen))
    check(pages == 4, "13 albums in pages of 4 are 4 pages under %s, got %d" % (sort, pages))
    if sort == "position":
        check(seen == titles, "position order")
step("walked every page with cursors under 10 sorts")

# Add at an index, read it back by index.
inserted = create_album.sync(client=client, body=AlbumInput(title="Inserted", artist="Someone", year="1984"), index=2)
check(isinstance(inserted, AlbumWithIndex) and inserted.index == 2, "insert at 2: %r" % inserted)
at2 = get_album_at_index.sync(2, client=client)
check(isinstance(at2, AlbumWithIndex) and at2.id == inserted.id and at2.year == 1984, "get at 2: %r" % at2)
step("added at index 2 and got it by index")

# Patch with If-Match: the current tag works, the old one is 412.
first = get_album.sync_detailed(inserted.id, client=client)
tag = first.headers["ETag"]
patched = update_album.sync_detailed(inserted.id, client=client, body=AlbumPatch(genre="Jazz"), if_match=tag)
check(patched.status_code == 200 and isinstance(patched.parsed, AlbumWithIndex) and patched.parsed.genre == "Jazz", "patch: %r" % patched)
stale = update_album.sync_detailed(inserted.id, client=client, body=AlbumPatch(genre="Rock"), if_match=tag)
check(stale.status_code == 412 and isinstance(stale.parsed, Problem), "stale If-Match: %d" % stale.status_code)
step("patched with If-Match; the stale tag was 412 (%s)" % stale.parsed.title)

# A 422 decoded into the generated problem type, with its field errors.
bad = create_album.sync_detailed(client=client, body=AlbumInput(title="", artist="Nobody", year=99))
check(bad.status_code == 422 and isinstance(bad.parsed, ValidationProblem), "422: %r" % bad)
fields = sorted(error.field for error in bad.parsed.errors)
check(fields == ["title", "year"], "422 fields: %r" % fields)
step("422 decoded as ValidationProblem naming %s" % ", ".join(fields))

# Delete, then undo puts it back where it was.
removed = delete_album.sync(inserted.id, client=client)
check(isinstance(removed, AlbumWithIndex) and removed.index == 2, "delete: %r" % removed)
gone = get_album.sync_detailed(inserted.id, client=client)
check(gone.status_code == 404 and isinstance(gone.parsed, Problem), "deleted album is 404")
undone = undo.sync(client=client)
check(isinstance(undone, UndoResult) and undone.album is not None and undone.album.index == 2, "undo: %r" % undone)
check(get_album_at_index.sync(2, client=client).id == inserted.id, "undo restored index 2")
step("deleted, then undo restored it at index 2")

# Settings: read and patch with the token; without the right token it is 401.
refused = get_settings.sync_detailed(client=stranger)
check(refused.status_code == 401 and isinstance(refused.parsed, Problem), "wrong token: %d" % refused.status_code)
settings = get_settings.sync_detailed(client=client)
check(settings.status_code == 200 and isinstance(settings.parsed, Settings), "settings: %d" % settings.status_code)
check(settings.parsed.access.passcode_enabled is True, "the lock is on")
changed = patch_settings.sync_detailed(client=client, body=SettingsPatch(undo=SettingsPatchUndoType0.from_dict({"depth": 40})),
                                       if_match=settings.headers["ETag"])
check(changed.status_code == 200 and changed.parsed.undo.depth == 40, "patch settings: %r" % changed)
step("settings read and patched with the token (a wrong token was 401)")

# The change feed, paged until `more` is false.
since, kinds = 0, []
while True:
    feed = list_changes.sync(client=client, since=since, limit=5)
    check(isinstance(feed, ChangePage), "changes: %r" % feed)
    kinds += [change.kind for change in feed.changes]
    since = feed.next_
    if not feed.more:
        break
check(kinds.count("added") >= 15 and "deleted" in kinds and "updated" in kinds, "feed kinds: %r" % kinds)
ahead = list_changes.sync_detailed(client=client, since=since + 100)
check(ahead.status_code == 400 and isinstance(ahead.parsed, Problem), "since ahead: %d" % ahead.status_code)
step("change feed paged to version %d (%d changes); since ahead of it is 400" % (since, len(kinds)))

# A cover, fetched by the server from the local upstream.
covered = create_album.sync(client=client, body=AlbumInput(title="Covered", artist="Painter", cover_url=cover_url))
cover = get_album_cover.sync_detailed(covered.id, client=client)
check(cover.status_code == 200 and isinstance(cover.parsed, File), "cover: %d" % cover.status_code)
image = cover.parsed.payload.read()
check(image[:8] == b"\x89PNG\r\n\x1a\n", "cover bytes are a PNG")
step("cover fetched (%d bytes of PNG)" % len(image))
print("scenario passed")
