#!/usr/bin/env python3
"""scenario.py's tour of BlueLibrary again, with only the client that openapi-generator's
`python` generator makes from openapi.yaml (package `bluelibrary_og`, on PYTHONPATH; see
clients/python/generate-openapi-generator).

Usage: scenario_openapi_generator.py BASE_URL TOKEN COVER_URL

The same server as scenario.py (fresh, BLUELIBRARY_TOKEN=TOKEN, allowed to fetch COVER_URL) and
the same steps (scenario_common.STEPS). This generator's idioms differ from
openapi-python-client's, and the scenario uses them as a client author would:
  - every answer outside 200-299 raises ApiException (a subclass for 400, 401, 404, 409, 422,
    5xx) whose `status`, `headers` and `data` (the body decoded as the spec's schema for that
    status, such as Problem) carry the answer; so does a 304, which has no body;
  - `*_with_http_info` returns the status and headers with the decoded body;
  - the models validate the spec's constraints before sending (minLength, the year range), so
    the scenario builds the invalid album for the server's 422 with `model_construct`;
  - a oneOf or anyOf schema is a wrapper model (Year(1999), TutorialDeleteAlbumRequest(...)).
Prints one line per step; exits non-zero on the first failure.
"""
from scenario_common import ALBUMS, PAGE, PNG_MAGIC, SORTS, arguments, check, check_feed, check_walk, passed, step

from bluelibrary_og import ApiClient, Configuration
from bluelibrary_og.api.albums_api import AlbumsApi
from bluelibrary_og.api.events_api import EventsApi
from bluelibrary_og.api.keys_api import KeysApi
from bluelibrary_og.api.libraries_api import LibrariesApi
from bluelibrary_og.api.settings_api import SettingsApi
from bluelibrary_og.api.tutorial_api import TutorialApi
from bluelibrary_og.api.undo_api import UndoApi
from bluelibrary_og.exceptions import ApiException, BadRequestException, ForbiddenException, NotFoundException, UnauthorizedException
from bluelibrary_og.models import (AlbumFields, AlbumInput, AlbumPage, BatchOperation, BatchOperationOneOf, BatchOperationOneOf1,
                                   BatchOperationOneOf2, BatchRequest, BatchResult, AlbumPatch, AlbumWithIndex, ChangePage, IndexBody, Key,
                                   KeyCreate, KeyScope, KeySelf, Library, LibraryCreate, Problem, Settings,
                                   SettingsPatch, TutorialDeleteAlbumRequest, UndoResult, ValidationProblem, Year)
from pydantic import ValidationError

base_url, token, cover_url = arguments("scenario_openapi_generator.py BASE_URL TOKEN COVER_URL")
client = ApiClient(Configuration(host=base_url, access_token=token))
stranger = ApiClient(Configuration(host=base_url, access_token="not-the-token"))
albums, events, settings_api, tutorial, undo = AlbumsApi(client), EventsApi(client), SettingsApi(client), TutorialApi(client), UndoApi(client)


def raised(call, kind=ApiException):
    """The ApiException that `call` raised (a failure if it raised none, or another kind)."""
    try:
        answer = call()
    except kind as error:
        return error
    raise SystemExit("FAILED: expected %s, got the answer %r" % (kind.__name__, answer))


# Albums to page through.
for n, (title, artist, year) in enumerate(ALBUMS):
    made = albums.create_album(AlbumInput(title=title, artist=artist, year=Year(year)))
    check(isinstance(made, AlbumWithIndex) and made.index == n, "add %s" % title)
step("added %d albums" % len(ALBUMS))

# Every page, under every sort, following `next` until it is null.
for sort in SORTS:
    seen, cursor, pages = [], None, 0
    while True:
        page = albums.list_albums(limit=PAGE, sort=sort, cursor=cursor)
        check(isinstance(page, AlbumPage), "page under %s: %r" % (sort, page))
        seen += [album.title for album in page.items]
        pages += 1
        if page.next is None:
            break
        cursor = page.next
    check_walk(sort, seen, pages)
step("walked every page with cursors under %d sorts" % len(SORTS))

# Add at an index (the year as the 4-digit string the spec allows on input), read it back by index.
inserted = albums.create_album(AlbumInput(title="Inserted", artist="Someone", year=Year("1984")), index=2)
check(isinstance(inserted, AlbumWithIndex) and inserted.index == 2, "insert at 2: %r" % inserted)
at2 = albums.get_album_at_index(2)
check(isinstance(at2, AlbumWithIndex) and at2.id == inserted.id and at2.year == 1984, "get at 2: %r" % at2)
step("added at index 2 and got it by index")

# A conditional GET: the album's and a page's ETag sent back as If-None-Match is 304, no body.
first = albums.get_album_with_http_info(inserted.id)
tag = first.headers["ETag"]
unchanged = raised(lambda: albums.get_album(inserted.id, if_none_match=tag))
check(unchanged.status == 304 and unchanged.data is None and not unchanged.body, "album If-None-Match: %r" % unchanged)
check(unchanged.headers.get("ETag") == tag, "the 304 carries the ETag")
listed = albums.list_albums_with_http_info(limit=PAGE)
same_page = raised(lambda: albums.list_albums(limit=PAGE, if_none_match=listed.headers["ETag"]))
check(same_page.status == 304 and same_page.data is None, "page If-None-Match: %r" % same_page)
step("If-None-Match with the current ETag is 304 (an album and a page), raised as ApiException(status=304)")

# Patch with If-Match: the current tag works, the old one is 412.
patched = albums.update_album_with_http_info(inserted.id, AlbumPatch(genre="Jazz"), if_match=tag)
check(patched.status_code == 200 and isinstance(patched.data, AlbumWithIndex) and patched.data.genre == "Jazz", "patch: %r" % patched)
stale = raised(lambda: albums.update_album(inserted.id, AlbumPatch(genre="Rock"), if_match=tag))
check(stale.status == 412 and isinstance(stale.data, Problem), "stale If-Match: %r" % stale)
step("patched with If-Match; the stale tag was 412 (%s)" % stale.data.title)

# The spec's constraints are in the models: an empty title and the year 99 are refused before
# sending. Sent anyway (model_construct skips the check), the server's 422 decodes as
# ValidationProblem naming both.
refused = raised(lambda: AlbumInput(title="", artist="Nobody", year=Year(99)), ValidationError)
check(refused.error_count() >= 1, "client-side validation")
bad = raised(lambda: albums.create_album(AlbumInput.model_construct(title="", artist="Nobody", year=Year.model_construct(actual_instance=99))))
# The 422 is `anyOf: [ValidationProblem, Problem]`: a wrapper whose actual_instance is the one that matched.
problem = getattr(bad.data, "actual_instance", None)
check(bad.status == 422 and isinstance(problem, ValidationProblem), "422: %r" % bad)
fields = sorted(error["field"] for error in problem.errors)
check(fields == ["title", "year"], "422 fields: %r" % fields)
step("422 decoded as ValidationProblem naming %s (the models refuse them before sending)" % ", ".join(fields))

# Delete, then undo puts it back where it was.
removed = albums.delete_album(inserted.id)
check(isinstance(removed, AlbumWithIndex) and removed.index == 2, "delete: %r" % removed)
gone = raised(lambda: albums.get_album(inserted.id), NotFoundException)
check(gone.status == 404 and isinstance(gone.data, Problem), "deleted album is 404")
undone = undo.undo()
check(isinstance(undone, UndoResult) and undone.album is not None and undone.album.index == 2, "undo: %r" % undone)
check(albums.get_album_at_index(2).id == inserted.id, "undo restored index 2")
step("deleted, then undo restored it at index 2")

# The tutorial app's delete call, with the JSON bodies: an object, then a bare number.
for body in (IndexBody(index=2), 2):
    removed = tutorial.tutorial_delete_album(TutorialDeleteAlbumRequest(body))
    check(isinstance(removed, AlbumWithIndex) and removed.id == inserted.id and removed.index == 2, "deleteAlbum %r: %r" % (body, removed))
    check(undo.undo().album.index == 2, "undo after deleteAlbum")
step("POST /api/deleteAlbum with {\"index\": 2} and with 2 (each undone)")

# Settings: read and patch with the token; without the right token it is 401.
locked_out = raised(lambda: SettingsApi(stranger).get_settings(), UnauthorizedException)
check(locked_out.status == 401 and isinstance(locked_out.data, Problem), "wrong token: %r" % locked_out)
settings = settings_api.get_settings_with_http_info()
check(settings.status_code == 200 and isinstance(settings.data, Settings), "settings: %r" % settings)
check(settings.data.access.passcode_enabled is True, "the lock is on")
changed = settings_api.patch_settings(SettingsPatch(undo={"depth": 40}), if_match=settings.headers["ETag"])
check(isinstance(changed, Settings) and changed.undo.depth == 40, "patch settings: %r" % changed)
step("settings read and patched with the token (a wrong token was 401)")

# The change feed, paged until `more` is false.
since, kinds = 0, []
while True:
    feed = events.list_changes(since=since, limit=5)
    check(isinstance(feed, ChangePage), "changes: %r" % feed)
    kinds += [change.kind for change in feed.changes]
    since = feed.next
    if not feed.more:
        break
check_feed(kinds)
ahead = raised(lambda: events.list_changes(since=since + 100), BadRequestException)
check(ahead.status == 400 and isinstance(ahead.data, Problem), "since ahead: %r" % ahead)
step("change feed paged to version %d (%d changes); since ahead of it is 400" % (since, len(kinds)))

# A cover, fetched by the server from the local upstream.
covered = albums.create_album(AlbumInput(title="Covered", artist="Painter", cover_url=cover_url))
cover = albums.get_album_cover_with_http_info(covered.id)
check(cover.status_code == 200 and isinstance(cover.data, (bytes, bytearray)), "cover: %r" % cover.status_code)
check(bytes(cover.data[:8]) == PNG_MAGIC, "cover bytes are a PNG")
step("cover fetched (%d bytes of PNG)" % len(cover.data))

# A batch that is not atomic: an add, a patch of it by ref, a move past the end (refused, 422).
answer = albums.apply_batch(BatchRequest(atomic=False, operations=[
    BatchOperation(BatchOperationOneOf(op="add", album=AlbumFields(title="Batched", artist="Many"))),
    BatchOperation(BatchOperationOneOf1(op="update", ref=0, patch=AlbumPatch(year=Year(2001)))),
    BatchOperation(BatchOperationOneOf2(op="move", id=covered.id, index=9999))]))
check(isinstance(answer, BatchResult) and answer.applied == 2 and answer.refused == 1, "batch: %r" % answer)
check(answer.results[1].album.year == 2001 and answer.results[2].status == 422, "batch results: %r" % answer.results)
undone = undo.undo()
check(undone.undone == "take back a batch of 2 changes", "undo a batch: %r" % undone)
step("batch applied 2 of 3 (the move past the end was 422); one undo took both back")

# A batch that moves an album to another library (in the batch's one transaction): it is there
# and no longer here (NotFoundException), both versions are in the answer; one undo of the
# batch's library takes it back.
vinyl = LibrariesApi(client).create_library(LibraryCreate(id="vinyl", name="Vinyl"))
check(isinstance(vinyl, Library) and vinyl.id == "vinyl", "create library: %r" % vinyl)
moved = albums.apply_batch(BatchRequest(operations=[
    BatchOperation(BatchOperationOneOf2(op="move", id=covered.id, library="vinyl"))]))
check(isinstance(moved, BatchResult) and moved.applied == 1 and moved.refused == 0, "move to vinyl: %r" % moved)
arrival = moved.results[0].arrival_version
check(isinstance(arrival, int) and moved.destinations == {"vinyl": arrival}, "destinations: %r" % moved)
check(albums.get_album_in_library("vinyl", covered.id).id == covered.id, "the album is in vinyl")
raised(lambda: albums.get_album(covered.id), NotFoundException)
undone = undo.undo()
check(isinstance(undone, UndoResult), "undo the move: %r" % undone)
check(albums.get_album(covered.id).id == covered.id, "the album is back in default")
raised(lambda: albums.get_album_in_library("vinyl", covered.id), NotFoundException)
step("batch moved an album to library vinyl (its version %d there); one undo brought it back" % arrival)

# An API key that may only read, made with the admin token (the token is the admin key
# `token`): its secret is in the answer once; it reads and says who it is, a write with it is
# 403 (ForbiddenException), and once deleted it is 401. (While reads are open to all, as here,
# a read ignores the key: who-am-I is what checks a key sent anyway.)
keys = KeysApi(client)
made = keys.create_key(KeyCreate(name="reader", scopes=[KeyScope.READ]))
check(isinstance(made, Key) and made.secret and made.secret.startswith(made.id + "_"), "create key: %r" % made)
check(made.scopes == [KeyScope.READ] and made.libraries is None and made.expires_at is None, "the new key: %r" % made)
reader = ApiClient(Configuration(host=base_url, access_token=made.secret))
page = AlbumsApi(reader).list_albums(limit=PAGE)
check(isinstance(page, AlbumPage) and len(page.items) == PAGE, "read with the key: %r" % page)
me = KeysApi(reader).show_caller_key()
check(isinstance(me, KeySelf) and me.key.id == made.id and me.scopes == [KeyScope.READ] and me.locked, "who am I: %r" % me)
write = raised(lambda: AlbumsApi(reader).create_album(AlbumInput(title="No", artist="Scope")), ForbiddenException)
check(write.status == 403 and isinstance(write.data, Problem), "write with a read key: %r" % write)
listed = keys.list_keys()
check(sorted(key.id for key in listed.keys) == sorted([made.id, "token"]) and all(key.secret is None for key in listed.keys), "keys: %r" % listed)
deleted = keys.delete_key_with_http_info(made.id)
check(deleted.status_code == 204, "delete key: %r" % deleted.status_code)
revoked = raised(lambda: KeysApi(reader).show_caller_key(), UnauthorizedException)
check(revoked.status == 401 and isinstance(revoked.data, Problem), "a deleted key: %r" % revoked)
step("a read key (%s) read a page, a write with it was 403 (%s), deleted it is 401" % (made.id, write.data.title))
passed()
