#!/usr/bin/env python3
"""A client author's tour of BlueLibrary, with only the client that openapi-python-client
generates from openapi.yaml (package `bluelibrary_client`, on PYTHONPATH).

Usage: scenario.py BASE_URL TOKEN COVER_URL

The same steps as scenario_openapi_generator.py (openapi-generator's client), listed in
scenario_common.STEPS; what both share (arguments, albums, expected answers) is in
scenario_common.py. The server must be fresh (an empty `default` library), started with write protection on
(BLUELIBRARY_TOKEN=TOKEN), and allowed to fetch COVER_URL (a PNG). Every call goes through the
generated functions and models; an answer the spec does not list raises (the client is made
with raise_on_unexpected_status). Prints one line per step; exits non-zero on the first failure.
Run by Tests/BlueLibraryServerTests/GeneratedClientTests.swift (see clients/python/generate).
"""
from scenario_common import ALBUMS, PAGE, PNG_MAGIC, SORTS, arguments, check, check_feed, check_walk, passed, step

from bluelibrary_client import AuthenticatedClient
from bluelibrary_client.api.albums import (apply_batch, create_album, delete_album, get_album, get_album_at_index,
                                           get_album_cover, get_album_in_library, list_albums, update_album)
from bluelibrary_client.api.libraries import create_library
from bluelibrary_client.api.events import list_changes
from bluelibrary_client.api.keys import create_key, delete_key, list_keys, show_caller_key
from bluelibrary_client.api.settings import get_settings, patch_settings
from bluelibrary_client.api.tutorial import tutorial_delete_album
from bluelibrary_client.api.undo import undo
from bluelibrary_client.models import (AlbumFields, AlbumInput, AlbumPage, AlbumPatch, AlbumWithIndex, BatchOperationType0,
                                       BatchOperationType1, BatchOperationType2, BatchRequest, BatchResult, ChangePage, IndexBody,
                                       Key, KeyCreate, KeyList, KeyScope, KeySelf, Library, LibraryCreate, Problem, Settings,
                                       SettingsPatch, SettingsPatchUndoType0, UndoResult, ValidationProblem)
from bluelibrary_client.types import File

base_url, token, cover_url = arguments("scenario.py BASE_URL TOKEN COVER_URL")
client = AuthenticatedClient(base_url=base_url, token=token, raise_on_unexpected_status=True)
stranger = AuthenticatedClient(base_url=base_url, token="not-the-token", raise_on_unexpected_status=True)

# Albums to page through.
for n, (title, artist, year) in enumerate(ALBUMS):
    made = create_album.sync(client=client, body=AlbumInput(title=title, artist=artist, year=year))
    check(isinstance(made, AlbumWithIndex) and made.index == n, "add %s" % title)
step("added %d albums" % len(ALBUMS))

# Every page, under every sort, following `next` until it is null.
for sort in SORTS:
    seen, cursor, pages = [], None, 0
    while True:
        page = list_albums.sync(client=client, limit=PAGE, sort=sort, **({"cursor": cursor} if cursor else {}))
        check(isinstance(page, AlbumPage), "page under %s: %r" % (sort, page))
        seen += [album.title for album in page.items]
        pages += 1
        if page.next_ is None:
            break
        cursor = page.next_
    check_walk(sort, seen, pages)
step("walked every page with cursors under %d sorts" % len(SORTS))

# Add at an index, read it back by index.
inserted = create_album.sync(client=client, body=AlbumInput(title="Inserted", artist="Someone", year="1984"), index=2)
check(isinstance(inserted, AlbumWithIndex) and inserted.index == 2, "insert at 2: %r" % inserted)
at2 = get_album_at_index.sync(2, client=client)
check(isinstance(at2, AlbumWithIndex) and at2.id == inserted.id and at2.year == 1984, "get at 2: %r" % at2)
step("added at index 2 and got it by index")

# A conditional GET: the album's and a page's ETag sent back as If-None-Match is 304, no body.
first = get_album.sync_detailed(inserted.id, client=client)
unchanged = get_album.sync_detailed(inserted.id, client=client, if_none_match=first.headers["ETag"])
check(unchanged.status_code == 304 and unchanged.parsed is None, "album If-None-Match: %d" % unchanged.status_code)
check(unchanged.headers.get("ETag") == first.headers["ETag"], "the 304 carries the ETag")
listed = list_albums.sync_detailed(client=client, limit=PAGE)
same_page = list_albums.sync_detailed(client=client, limit=PAGE, if_none_match=listed.headers["ETag"])
check(same_page.status_code == 304 and same_page.parsed is None, "page If-None-Match: %d" % same_page.status_code)
step("If-None-Match with the current ETag is 304 (an album and a page)")

# Patch with If-Match: the current tag works, the old one is 412.
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

# The tutorial app's delete call, with the JSON bodies: an object, then a bare number.
for body in (IndexBody(index=2), 2):
    removed = tutorial_delete_album.sync(client=client, body=body)
    check(isinstance(removed, AlbumWithIndex) and removed.id == inserted.id and removed.index == 2, "deleteAlbum %r: %r" % (body, removed))
    check(undo.sync(client=client).album.index == 2, "undo after deleteAlbum")
step("POST /api/deleteAlbum with {\"index\": 2} and with 2 (each undone)")

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
check_feed(kinds)
ahead = list_changes.sync_detailed(client=client, since=since + 100)
check(ahead.status_code == 400 and isinstance(ahead.parsed, Problem), "since ahead: %d" % ahead.status_code)
step("change feed paged to version %d (%d changes); since ahead of it is 400" % (since, len(kinds)))

# A cover, fetched by the server from the local upstream.
covered = create_album.sync(client=client, body=AlbumInput(title="Covered", artist="Painter", cover_url=cover_url))
cover = get_album_cover.sync_detailed(covered.id, client=client)
check(cover.status_code == 200 and isinstance(cover.parsed, File), "cover: %d" % cover.status_code)
image = cover.parsed.payload.read()
check(image[:8] == PNG_MAGIC, "cover bytes are a PNG")
step("cover fetched (%d bytes of PNG)" % len(image))

# A batch that is not atomic: an add, a patch of it by ref, a move past the end (refused, 422).
answer = apply_batch.sync(client=client, body=BatchRequest(atomic=False, operations=[
    BatchOperationType0(op="add", album=AlbumFields(title="Batched", artist="Many")),
    BatchOperationType1(op="update", ref=0, patch=AlbumPatch(year=2001)),
    BatchOperationType2(op="move", id=covered.id, index=9999)]))
check(isinstance(answer, BatchResult) and answer.applied == 2 and answer.refused == 1, "batch: %r" % answer)
check(answer.results[1].album.year == 2001 and answer.results[2].status == 422, "batch results: %r" % answer.results)
undone = undo.sync(client=client)
check(isinstance(undone, UndoResult) and undone.undone == "take back a batch of 2 changes", "undo a batch: %r" % undone)
step("batch applied 2 of 3 (the move past the end was 422); one undo took both back")

# A batch that moves an album to another library (in the batch's one transaction): it is there
# and no longer here, both versions are in the answer; one undo of the batch's library takes it
# back.
vinyl = create_library.sync(client=client, body=LibraryCreate(id="vinyl", name="Vinyl"))
check(isinstance(vinyl, Library) and vinyl.id == "vinyl", "create library: %r" % vinyl)
moved = apply_batch.sync(client=client, body=BatchRequest(operations=[
    BatchOperationType2(op="move", id=covered.id, library="vinyl")]))
check(isinstance(moved, BatchResult) and moved.applied == 1 and moved.refused == 0, "move to vinyl: %r" % moved)
arrival = moved.results[0].arrival_version
check(isinstance(arrival, int) and moved.destinations.additional_properties == {"vinyl": arrival}, "destinations: %r" % moved)
check(get_album_in_library.sync_detailed("vinyl", covered.id, client=client).status_code == 200, "the album is in vinyl")
check(get_album.sync_detailed(covered.id, client=client).status_code == 404, "the album left default")
undone = undo.sync(client=client)
check(isinstance(undone, UndoResult), "undo the move: %r" % undone)
check(get_album.sync_detailed(covered.id, client=client).status_code == 200, "the album is back in default")
check(get_album_in_library.sync_detailed("vinyl", covered.id, client=client).status_code == 404, "and no longer in vinyl")
step("batch moved an album to library vinyl (its version %d there); one undo brought it back" % arrival)

# An API key that may only read, made with the admin token (the token is the admin key
# `token`): its secret is in the answer once; it reads and says who it is, a write with it is
# 403, and once deleted it is 401. (While reads are open to all, as here, a read ignores the
# key: who-am-I is what checks a key sent anyway.)
made = create_key.sync(client=client, body=KeyCreate(name="reader", scopes=[KeyScope.READ]))
check(isinstance(made, Key) and isinstance(made.secret, str) and made.secret.startswith(made.id + "_"), "create key: %r" % made)
check(made.scopes == [KeyScope.READ] and made.libraries is None and made.expires_at is None, "the new key: %r" % made)
reader = AuthenticatedClient(base_url=base_url, token=made.secret, raise_on_unexpected_status=True)
page = list_albums.sync(client=reader, limit=PAGE)
check(isinstance(page, AlbumPage) and len(page.items) == PAGE, "read with the key: %r" % page)
me = show_caller_key.sync(client=reader)
check(isinstance(me, KeySelf) and me.key.id == made.id and me.scopes == [KeyScope.READ] and me.locked, "who am I: %r" % me)
write = create_album.sync_detailed(client=reader, body=AlbumInput(title="No", artist="Scope"))
check(write.status_code == 403 and isinstance(write.parsed, Problem), "write with a read key: %d" % write.status_code)
listed = list_keys.sync(client=client)
check(isinstance(listed, KeyList) and sorted(key.id for key in listed.keys) == sorted([made.id, "token"]), "keys: %r" % listed)
check(not any(isinstance(key.secret, str) for key in listed.keys), "no secret is listed")
deleted = delete_key.sync_detailed(made.id, client=client)
check(deleted.status_code == 204, "delete key: %d" % deleted.status_code)
revoked = show_caller_key.sync_detailed(client=reader)
check(revoked.status_code == 401 and isinstance(revoked.parsed, Problem), "a deleted key: %d" % revoked.status_code)
step("a read key (%s) read a page, a write with it was 403 (%s), deleted it is 401" % (made.id, write.parsed.title))
passed()
