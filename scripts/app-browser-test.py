#!/usr/bin/env python3
"""Drives the web app (/app/) in headless Chromium with Selenium, step by step.

Usage: app-browser-test.py --base http://127.0.0.1:PORT --token TOKEN [--screenshots DIR]
                           [--app-url http://127.0.0.1:PROXY/prefix]

The server must be a fresh `bluelibrary serve` (seeded with the tutorial's five albums),
started with BLUELIBRARY_TOKEN=TOKEN and `--cover-allow 127.0.0.1` (the covers come from a
small HTTP server this script starts on loopback). The browser reaches the server through a
relay that can cut its connections, at --app-url when given (e.g. nginx mounting the server
under /music/): every request the page makes must stay under that URL. Every step prints `ok <step>`; the first
failing step prints `FAIL <step>: <why>` and the exit status is 1. Run by the Swift test
WebAppBrowserTests (swift test / scripts/test), which starts the server.
"""
import argparse
import http.server
import json
import os
import re
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import zlib

# Selenium Manager must not look for drivers on the network: the Debian ones are given.
os.environ.setdefault("SE_OFFLINE", "true")

from selenium import webdriver
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select, WebDriverWait

WAIT = 15  # seconds any one condition may take


def png(width, height, rgb):
    """A small gradient PNG in one hue (no imaging library needed)."""
    rows = bytearray()
    for y in range(height):
        rows.append(0)
        for x in range(width):
            shade = 0.55 + 0.45 * (x + y) / (width + height)
            rows.extend(int(c * shade) for c in rgb)

    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(bytes(rows), 9)) + chunk(b"IEND", b"")


COLOURS = [(40, 90, 200), (200, 60, 60), (40, 160, 90), (220, 150, 30), (130, 70, 190)]
IMAGES = {f"/cover-{i}.png": png(256, 256, c) for i, c in enumerate(COLOURS)}


class CoverHandler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = IMAGES.get(self.path)
        if body is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "image/png")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class Failure(Exception):
    pass


class CuttableProxy:
    """A TCP relay on loopback in front of the server, for the browser: `cut()` closes every
    connection through it at once (a network drop), while new connections still go through."""

    def __init__(self, port):
        self.upstream = ("127.0.0.1", port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.lock = threading.Lock()
        self.open = []
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.upstream)
            with self.lock:
                self.open += [client, server]
            for source, target in ((client, server), (server, client)):
                threading.Thread(target=self.pump, args=(source, target), daemon=True).start()

    @staticmethod
    def pump(source, target):
        try:
            while data := source.recv(65536):
                target.sendall(data)
        except OSError:
            pass
        for end in (source, target):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self):
        with self.lock:
            ends, self.open = self.open, []
        for end in ends:
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class Run:
    def __init__(self, base, token, screenshots, app_url=None):
        self.base = base.rstrip("/")
        # The browser goes through a relay it can cut, to the server or to a proxy that mounts
        # it under a path prefix (--app-url http://127.0.0.1:PORT/music).
        front = urllib.parse.urlsplit(app_url or self.base)
        self.proxy = CuttableProxy(front.port)
        self.app_base = f"http://127.0.0.1:{self.proxy.port}{front.path.rstrip('/')}"
        self.token = token
        self.screenshots = screenshots
        self.covers = http.server.ThreadingHTTPServer(("127.0.0.1", 0), CoverHandler)
        threading.Thread(target=self.covers.serve_forever, daemon=True).start()
        self.cover_base = f"http://127.0.0.1:{self.covers.server_address[1]}"
        options = webdriver.ChromeOptions()
        options.binary_location = os.environ.get("CHROMIUM", "/usr/bin/chromium")
        for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                         "--window-size=1280,800", "--no-first-run", "--disable-extensions",
                         "--disable-background-networking", "--disable-component-update", "--disable-sync",
                         "--disable-default-apps", "--metrics-recording-only", "--no-default-browser-check"]:
            options.add_argument(argument)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
        service = Service(os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver"))
        self.driver = webdriver.Chrome(service=service, options=options)
        self.driver.set_script_timeout(WAIT)
        self.requests = []
        self.request_headers = []
        self.console = []

    # ---- helpers --------------------------------------------------------------------------

    def api(self, method, path, body=None, token=True, expect=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method)
        request.add_header("Accept", "application/json")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        if token:
            request.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                status, text = response.status, response.read()
        except urllib.error.HTTPError as error:
            status, text = error.code, error.read()
        if expect is not None and status != expect:
            raise Failure(f"{method} {path} answered {status}, not {expect}: {text[:300]!r}")
        return json.loads(text) if text.strip() else None

    def until(self, condition, what):
        try:
            return WebDriverWait(self.driver, WAIT, poll_frequency=0.05).until(lambda d: condition())
        except TimeoutException:
            raise Failure(f"timed out waiting until {what}")

    def js(self, script, *args):
        return self.driver.execute_script(script, *args)

    def names(self):
        return self.js("return [...document.querySelectorAll('#covers [role=option]')].map(o => o.getAttribute('aria-label'))")

    def loaded_count(self):
        """How many albums the list has loaded (the header's state line: "loaded · 50+ albums")."""
        match = re.search(r"(\d+)\+? albums", self.js("return document.getElementById('model-state').textContent"))
        return int(match.group(1)) if match else 0

    def selected_name(self):
        return self.js("const o = document.querySelector('#covers [aria-selected=true]'); return o && o.getAttribute('aria-label')")

    def selected_id(self):
        return self.js("const o = document.querySelector('#covers [aria-selected=true]'); return o && o.dataset.id")

    def table(self):
        return self.js("return [...document.querySelectorAll('#details tbody td')].map(c => c.textContent)")

    def loaded(self):
        self.until(lambda: self.js("return document.documentElement.dataset.state") == "loaded", "the list is loaded")
        self.until(lambda: self.js("return document.documentElement.dataset.live") == "live", "the event stream is live")

    def key(self, *keys):
        self.driver.switch_to.active_element.send_keys(*keys)

    def focus(self, element_id):
        self.js(f"document.getElementById('{element_id}').focus()")

    def shot(self, name):
        if self.screenshots:
            os.makedirs(self.screenshots, exist_ok=True)
            self.driver.save_screenshot(os.path.join(self.screenshots, name))

    def collect_logs(self):
        for entry in self.driver.get_log("performance"):
            message = json.loads(entry["message"])["message"]
            if message.get("method") == "Network.requestWillBeSent":
                request = message["params"]["request"]
                self.requests.append(request["url"])
                self.request_headers.append((request["url"], request.get("headers", {})))
        self.console.extend(self.driver.get_log("browser"))

    def token_dialog_open(self):
        return self.js("return document.getElementById('token-dialog').open")

    def enter_token(self, token):
        self.until(self.token_dialog_open, "the token prompt is shown")
        field = self.driver.find_element(By.CSS_SELECTOR, "#token-form input[name=token]")
        field.clear()
        field.send_keys(token, Keys.ENTER)

    # ---- steps ----------------------------------------------------------------------------

    def five_albums_appear(self):
        # The seed's covers point to the internet; give them covers on loopback instead.
        albums = self.api("GET", "/albums", token=False, expect=200)["items"]
        for i, album in enumerate(albums):
            self.api("PATCH", f"/albums/{album['id']}", {"coverUrl": f"{self.cover_base}/cover-{i}.png"}, expect=200)
        self.albums = albums
        self.driver.get(self.app_base + "/")  # a browser's Accept: sent on to app/
        self.until(lambda: self.driver.current_url == self.app_base + "/app/", "/ redirects the browser to /app/")
        self.loaded()
        expected = [f"{a['title']} - {a['artist']}" for a in albums]
        self.until(lambda: self.names() == expected, f"the five albums are shown ({expected})")
        self.until(lambda: self.js("return document.querySelectorAll('#covers .cover img').length") == 5, "five covers are shown")
        # Thumbnails (cover?size=128) of the 256x256 originals.
        widths = self.js("return [...document.querySelectorAll('#covers .cover img')].map(i => i.naturalWidth)")
        if widths != [128] * 5:
            raise Failure(f"the covers are {widths} pixels wide, not 128 (thumbnails)")
        self.until(lambda: self.table() == self.api("GET", f"/albums/{albums[0]['id']}/table", token=False)["values"],
                   "the first album's table is shown")
        heads = self.js("return [...document.querySelectorAll('#details thead th')].map(c => c.textContent)")
        if heads != ["Artist", "Album", "Genre", "Year"]:
            raise Failure(f"table headers are {heads}")
        self.shot("app-desktop.png")
        self.every_control_is_named("the covers")

    def the_event_parser_handles_split_chunks(self):
        # events.js's parser, fed in awkward pieces: CRLF and CR line ends, a field split across
        # chunks, multi-line data, comments, an id-only event, and a last event cut off unfinished.
        result = self.driver.execute_async_script("""
            const done = arguments[arguments.length - 1];
            import('./events.js').then(async ({ EventStream }) => {
                const seen = [];
                const stream = new EventStream({}, '', (type, data, id) => seen.push([type, data, id]), () => {});
                const chunks = [': heartbeat\\r\\n', 'id: 7\\r\\nevent: album.add', 'ed\\r\\ndata: {"id":"a",', '"index":1}\\r\\n\\r',
                                '\\nid: 8\\n\\nevent: album.deleted\\rdata: {"id":\\rdata: "b"}\\r\\r',
                                'event: album.moved\\ndata: {"id":"c"}'];
                const body = new ReadableStream({ start(c) { for (const t of chunks) c.enqueue(new TextEncoder().encode(t)); c.close(); } });
                const reader = body.pipeThrough(new TextDecoderStream()).getReader();
                await stream.readLines(reader, () => {});
                await stream.chain;
                done({ seen, lastEventId: stream.lastEventId });
            }).catch((e) => done({ error: String(e) }));
        """)
        expected = {"seen": [["album.added", {"id": "a", "index": 1}, "7"], ["album.deleted", {"id": "b"}, None]],
                    "lastEventId": "8"}
        if result != expected:
            raise Failure(f"the event parser gave {result}, not {expected}")

    def events_are_merged_one_at_a_time(self):
        # album.added's GET is answered only after album.deleted arrived: handled concurrently,
        # the late answer would put the deleted album back. The API here is a stand-in whose
        # answer the script releases, so the order is forced, not left to timing.
        result = self.driver.execute_async_script("""
            const done = arguments[arguments.length - 1];
            Promise.all([import('./events.js'), import('./model.js')]).then(async ([{ EventStream }, { AlbumList, Source }]) => {
                let release;
                const answered = new Promise((resolve) => { release = resolve; });
                const x = { id: 'x', title: 'X', artist: 'Y', index: 0 };
                const api = { get: async () => { await answered; return { status: 200, data: x, etag: null }; } };
                const list = new AlbumList(api, new Source('library', 'default'));
                list.items = [{ id: 'a', title: 'A', artist: 'B', index: 0 }];
                list.next = null;
                list.version = 1;
                list.state = 'loaded';
                const stream = new EventStream(api, '', (type, data) => list.merge(type, data), () => {});
                stream.dispatch({ type: 'album.added', data: ['{"id":"x","index":0,"version":2}'], id: '2' });
                stream.dispatch({ type: 'album.deleted', data: ['{"id":"x","index":0,"version":3}'], id: '3' });
                await new Promise((resolve) => setTimeout(resolve, 0));
                const versionBefore = list.version;
                release();
                await stream.chain;
                // Every promise step still pending (a concurrent merge's late answer) runs first.
                await new Promise((resolve) => setTimeout(resolve, 0));
                done({ ids: list.items.map((item) => item.id), versionBefore, version: list.version });
            }).catch((e) => done({ error: String(e) }));
        """)
        expected = {"ids": ["a"], "versionBefore": 2, "version": 3}
        if result != expected:
            raise Failure(f"added-then-deleted merged to {result}, not {expected} (the deleted album came back?)")
        # The same against the server: albums added and deleted at once never stay on screen.
        self.loaded()
        for i in range(5):
            album = self.api("POST", "/albums", {"title": f"Fleeting {i}", "artist": "Gone Soon", "index": 0}, expect=201)
            self.api("DELETE", f"/albums/{album['id']}", expect=200)
        self.api("POST", "/albums", {"title": "Marker", "artist": "After All", "index": 0}, expect=201)
        self.until(lambda: self.names()[:1] == ["Marker - After All"], "the album added after them arrives")
        stale = [name for name in self.names() if name.endswith(" - Gone Soon")]
        if stale:
            raise Failure(f"deleted albums came back: {stale}")
        marker = self.api("GET", "/albums/at/0", token=False, expect=200)
        self.api("DELETE", f"/albums/{marker['id']}", expect=200)
        self.until(lambda: "Marker - After All" not in self.names(), "the marker's delete arrives")

    def keyboard_selects(self):
        # Tab order: the library switcher, Import / export…, the search box, the toolbar, then the covers.
        self.js("document.activeElement.blur(); window.scrollTo(0, 0)")
        order = []
        self.driver.find_element(By.TAG_NAME, "body").send_keys(Keys.TAB)
        for _ in range(14):
            order.append(self.js("return document.activeElement.id"))
            if order[-1] == "covers":
                break
            self.key(Keys.TAB)
        if order[:3] != ["source", "transfer", "search"] or order[-1] != "covers" or "add" not in order:
            raise Failure(f"tab order was {order}")
        # Inside the toolbar the arrow keys move between the enabled buttons.
        self.focus("add")
        self.key(Keys.ARROW_RIGHT)
        if self.js("return document.activeElement.id") != "edit":
            raise Failure("right arrow from Add does not wrap to Edit")
        self.key(Keys.ARROW_LEFT)
        if self.js("return document.activeElement.id") != "add":
            raise Failure("left arrow from Edit does not go back to Add")
        self.focus("covers")
        self.key(Keys.ARROW_RIGHT)
        self.key(Keys.ARROW_RIGHT)
        third = self.albums[2]
        self.until(lambda: self.selected_name() == f"{third['title']} - {third['artist']}", "right right selects the third album")
        if self.js("return document.getElementById('covers').getAttribute('aria-activedescendant')") != f"album-{third['id']}":
            raise Failure("aria-activedescendant does not name the selected option")
        values = self.api("GET", f"/albums/{third['id']}/table", token=False)["values"]
        self.until(lambda: self.table() == values, "the table shows the third album")
        self.key(Keys.ARROW_LEFT)
        second = self.albums[1]
        self.until(lambda: self.selected_name() == f"{second['title']} - {second['artist']}", "left selects the second album")

    def search_as_you_type(self):
        # Words in any field, the last one as the start of a word, accents folded; the list
        # follows the box a moment after the last key, and an empty box shows everything again.
        everything = self.names()
        box = self.driver.find_element(By.ID, "search")
        box.send_keys("sun")
        suns = [f"{a['title']} - {a['artist']}" for a in self.albums if "Sun" in a["title"]]
        self.until(lambda: self.names() == suns, f"searching 'sun' shows {suns}")
        self.until(lambda: self.js("return document.documentElement.dataset.state") == "loaded", "the search result is loaded")
        box.send_keys(" STI")
        self.until(lambda: len(self.names()) == 1 and "Sting" in self.names()[0], "'sun STI' leaves Sting's album")
        box.clear()
        box.send_keys("bówie")
        self.until(lambda: len(self.names()) == 1 and "Bowie" in self.names()[0], "'bówie' finds Bowie")
        results = lambda: (self.js("return document.documentElement.dataset.results"), self.driver.find_element(By.ID, "results").text)
        self.until(lambda: results()[0] == "loaded" and results()[1].startswith("1 album match “bówie”"), f"the results line says one album matches ({results()})")
        self.shot("app-search.png")
        box.clear()
        box.send_keys(Keys.SPACE)  # clear() fires no input event; a space is no word: everything
        self.until(lambda: self.names() == everything, "an empty search shows every album again")
        if not self.driver.find_element(By.ID, "results").get_attribute("hidden"):
            raise Failure("the results line is shown without a search")
        # Keyboard first: / from the covers goes to the box (typing there, / is a character).
        self.focus("covers")
        self.key("/")
        self.until(lambda: self.js("return document.activeElement.id") == "search", "/ focuses the search box")
        self.key("zzqx/")
        self.until(lambda: results()[0] == "empty" and "No album matches “zzqx/”" in results()[1], f"no match is said ({results()})")
        if self.names():
            raise Failure(f"no match still shows {self.names()}")
        self.shot("app-search-empty.png")
        # Escape clears the box and shows the whole list at once; a second Escape goes back to the list.
        self.key(Keys.ESCAPE)
        self.until(lambda: self.names() == everything and results()[0] == "all", "Escape shows every album again")
        if self.js("return document.getElementById('search').value") != "":
            raise Failure("Escape left the search box filled")
        self.key(Keys.ESCAPE)
        self.until(lambda: self.js("return document.activeElement.id") == "covers", "a second Escape goes back to the covers")
        # A search the server refuses (a filter over 500 characters, 400): the error state.
        self.js("const b = document.getElementById('search'); b.value = 'a'.repeat(501); b.dispatchEvent(new Event('input'))")
        self.until(lambda: results()[0] == "error" and "failed" in results()[1], f"a refused search says so ({results()})")
        self.focus("search")
        self.key(Keys.ESCAPE)
        self.until(lambda: self.names() == everything and results()[0] == "all", "Escape after the error shows every album again")
        box.clear()
        # The next step deletes the second album: select it again.
        self.focus("covers")
        self.key(Keys.HOME)
        self.key(Keys.ARROW_RIGHT)
        second = self.albums[1]
        self.until(lambda: self.selected_name() == f"{second['title']} - {second['artist']}", "the second album is selected again")

    def delete_then_undo_with_the_token(self):
        # The server is write-protected: the first delete gets 401, the app asks for the token.
        second = self.albums[1]
        # The cover PATCHes are on the undo stack: Undo says the last of them.
        undo_title = lambda: self.js("return document.getElementById('undo').title")
        before = self.api("GET", "/undo", token=False)
        if not before["canUndo"] or undo_title() != f"Undo: {before['next']}":
            raise Failure(f"Undo's title is {undo_title()!r}, the stack's top {before['next']!r}")
        self.focus("delete")
        self.key(Keys.ENTER)
        self.enter_token("not-the-token-at-all")
        self.until(lambda: "not right" in self.js("return document.getElementById('token-reason').textContent"),
                   "a wrong token is reported as wrong")
        self.enter_token(self.token)
        self.until(lambda: len(self.names()) == 4, "the album is deleted")
        if f"{second['title']} - {second['artist']}" in self.names():
            raise Failure("the deleted album is still shown")
        if self.js("return localStorage.getItem('bluelibrary.token')") is not None:
            raise Failure("the token was written to localStorage")
        if self.js("return sessionStorage.getItem('bluelibrary.token')") != self.token:
            raise Failure("the token is not in sessionStorage")
        self.until(lambda: not self.js("return document.getElementById('undo').disabled"), "Undo is enabled")
        title = self.js("return document.getElementById('undo').title")
        if second["title"] not in title:
            raise Failure(f"Undo's title does not say what it undoes: {title!r}")
        self.focus("undo")
        self.key(Keys.ENTER)
        expected = [f"{a['title']} - {a['artist']}" for a in self.albums]
        self.until(lambda: self.names() == expected, "undo brings the album back at its place")
        self.until(lambda: undo_title() == f"Undo: {before['next']}", "Undo names the previous change again")
        # Undo everything: the button is disabled when the stack is empty.
        while self.api("GET", "/undo", token=False)["canUndo"]:
            self.api("POST", "/undo", expect=200)
        self.until(lambda: self.js("return document.getElementById('undo').disabled"), "Undo is disabled when there is nothing to undo")
        if undo_title() != "Nothing to undo":
            raise Failure(f"a disabled Undo's title is {undo_title()!r}")

    def chosen_names(self):
        return self.js("return [...document.querySelectorAll('#covers [aria-selected=true]')].map(o => o.getAttribute('aria-label'))")

    def batch_requests(self):
        self.collect_logs()
        return [url for url in self.requests if url.endswith("/batch")]

    def several_at_once(self):
        # Shift+arrows and Ctrl+click select several; Delete sends them in one batch, Undo
        # brings them all back; in the list view, Move to library… moves two in one batch,
        # refused first (the library went meanwhile: the banner names the album and why).
        from selenium.webdriver.common.action_chains import ActionChains
        name = lambda a: f"{a['title']} - {a['artist']}"
        everything = [name(a) for a in self.albums]
        self.api("POST", "/libraries", {"id": "annex", "name": "Annex"}, expect=201)
        self.api("POST", "/libraries", {"id": "gone", "name": "Gone"}, expect=201)
        self.focus("covers")
        self.key(Keys.HOME)
        self.until(lambda: self.chosen_names() == everything[:1], "Home selects the first album alone")
        self.key(Keys.SHIFT, Keys.ARROW_RIGHT)
        self.key(Keys.SHIFT, Keys.ARROW_RIGHT)
        self.until(lambda: self.chosen_names() == everything[:3], f"Shift+Right twice selects three ({self.chosen_names()})")
        if self.driver.find_element(By.ID, "delete").get_attribute("aria-label") != "Delete 3 albums":
            raise Failure("Delete does not say it deletes three albums")
        option = lambda i: self.driver.find_element(By.ID, f"album-{self.albums[i]['id']}")
        ActionChains(self.driver).key_down(Keys.CONTROL).click(option(4)).click(option(1)).key_up(Keys.CONTROL).perform()
        chosen = [everything[i] for i in (0, 2, 4)]
        self.until(lambda: self.chosen_names() == chosen, f"Ctrl+click adds the fifth and takes out the second ({self.chosen_names()})")
        self.shot("app-several.png")
        before = len(self.batch_requests())
        self.focus("covers")
        self.key(Keys.DELETE)
        left = [everything[i] for i in (1, 3)]
        self.until(lambda: self.names() == left, "Delete deletes the three in one go")
        if len(self.batch_requests()) != before + 1:
            raise Failure("the three deletes were not one POST /batch")
        if "Deleted 3 albums" not in self.driver.find_element(By.ID, "banner").text:
            raise Failure(f"the banner says {self.driver.find_element(By.ID, 'banner').text!r}")
        self.until(lambda: not self.js("return document.getElementById('undo').disabled"), "Undo is enabled")
        self.focus("undo")
        self.key(Keys.ENTER)
        self.until(lambda: self.names() == everything, "one Undo brings the three back at their places")
        # The list view: Shift+Down selects two rows; Move to library… offers the other libraries.
        self.driver.find_element(By.ID, "show-list").click()
        self.until(lambda: self.js("return document.activeElement.id") == "album-grid", "the list view has the focus")
        self.key(Keys.HOME)
        self.key(Keys.SHIFT, Keys.ARROW_DOWN)
        rows = lambda: self.js("return [...document.querySelectorAll('#album-grid [role=row][aria-selected=true]')].map(r => r.dataset.id)")
        self.until(lambda: rows() == [a["id"] for a in self.albums[:2]], f"Shift+Down selects two rows ({rows()})")
        self.focus("move")
        self.key(Keys.ENTER)
        self.until(lambda: self.js("return document.getElementById('move-dialog').open"), "Move to library… opens its dialog")
        offered = self.js("return [...document.querySelectorAll('#move-form option')].map(o => o.value)")
        if offered != ["annex", "gone"]:
            raise Failure(f"the dialog offers {offered}, not the other libraries")
        if self.js("return document.activeElement.name") != "library":
            raise Failure("the dialog does not focus its choice of library")
        Select(self.driver.find_element(By.CSS_SELECTOR, "#move-form select")).select_by_value("gone")
        self.api("DELETE", "/libraries/gone", expect=204)
        self.driver.find_element(By.CSS_SELECTOR, "#move-form [type=submit]").send_keys(Keys.ENTER)
        banner = lambda: self.driver.find_element(By.ID, "banner").text
        self.until(lambda: "was refused" in banner(), "the refused batch is reported")
        if self.albums[0]["title"] not in banner() or "Nothing in the batch was applied" not in banner():
            raise Failure(f"the refusal does not name the album or say nothing was applied: {banner()!r}")
        self.shot("app-batch-refused.png")
        ids = [a["id"] for a in self.albums]
        row_ids = lambda: [r["id"] for r in self.grid_rows() if r["id"]]
        if row_ids() != ids:
            raise Failure("a refused batch changed the list")
        before = len(self.batch_requests())
        self.focus("move")
        self.key(Keys.ENTER)
        self.until(lambda: self.js("return document.getElementById('move-dialog').open"), "the dialog opens again")
        self.driver.find_element(By.CSS_SELECTOR, "#move-form [type=submit]").send_keys(Keys.ENTER)  # Annex, the only other one now
        self.until(lambda: row_ids() == ids[2:], "the two albums leave the list")
        if len(self.batch_requests()) != before + 1:
            raise Failure("the two moves were not one POST /batch")
        moved = [name(a) for a in self.api("GET", "/libraries/annex/albums", token=False, expect=200)["items"]]
        if sorted(moved) != sorted(everything[:2]):
            raise Failure(f"Annex holds {moved}")
        self.shot("app-moved.png")
        self.focus("undo")
        self.key(Keys.ENTER)
        self.until(lambda: row_ids() == ids, "one Undo brings both back from Annex")
        self.driver.find_element(By.ID, "show-covers").click()
        self.until(lambda: self.names() == everything, "the covers show the five again")
        self.api("DELETE", "/libraries/annex", expect=204)
        self.until(lambda: self.js("return document.getElementById('undo').disabled"), "nothing is left to undo")
        self.focus("covers")
        self.key(Keys.HOME)

    def manage_libraries(self):
        # The admin token: Libraries and views… beside the switcher opens the dialog; create (a bad id
        # first), rename, then delete a library that holds an album: the 409 is explained and
        # Delete anyway sends ?force=true; the library shown then is replaced by default.
        dialog_open = lambda: self.js("return document.getElementById('libraries-dialog').open")
        switcher = lambda: self.js("return [...document.querySelectorAll('#source option')].map(o => [o.value, o.textContent])")
        note = lambda: self.driver.find_element(By.ID, "libraries-note").text
        self.until(lambda: not self.js("return document.getElementById('manage').hidden"), "an admin key sees Libraries and views…")
        self.focus("manage")
        self.key(Keys.ENTER)
        self.until(dialog_open, "Libraries and views… opens the dialog")
        self.until(lambda: self.js("return document.activeElement.name") == "id", "the new library's id has the focus")
        self.until(lambda: self.js("return document.querySelectorAll('#libraries-list li').length") == 1, "the dialog lists default")
        if self.js("return document.querySelector('#libraries-list li .danger')") is not None:
            raise Failure("default can be deleted in the dialog")
        self.key("no/slash", Keys.TAB, "Bad", Keys.ENTER)
        self.until(lambda: self.js("return document.querySelector('#library-create [name=id]').getAttribute('aria-invalid')") == "true"
                   or "failed" in note(), "a bad id is refused and said")
        field = self.driver.find_element(By.CSS_SELECTOR, "#library-create [name=id]")
        field.clear()
        field.send_keys("jazz", Keys.TAB)
        self.key(Keys.CONTROL, "a")
        self.key("Jazz", Keys.ENTER)
        self.until(lambda: "Created “Jazz”" in note(), f"the library is created ({note()!r})")
        self.until(lambda: ["library:jazz", "Jazz"] in switcher(), "the switcher lists Jazz")
        self.shot("app-libraries.png")
        name = self.driver.find_element(By.CSS_SELECTOR, "#libraries-list li[data-id=jazz] input")
        if name.get_attribute("aria-label") != "Name of jazz":
            raise Failure("the name field has no name for screen readers")
        name.send_keys(Keys.CONTROL, "a")
        name.send_keys("Jazz & Blues", Keys.ENTER)
        self.until(lambda: ["library:jazz", "Jazz & Blues"] in switcher(), "the rename reaches the switcher")
        if self.api("GET", "/libraries/jazz", token=False, expect=200)["name"] != "Jazz & Blues":
            raise Failure("the library was not renamed on the server")
        # Escape closes it and gives the focus back; show Jazz, which then gets an album.
        self.key(Keys.ESCAPE)
        self.until(lambda: not dialog_open() and self.js("return document.activeElement.id") == "manage", "Escape closes the dialog")
        Select(self.driver.find_element(By.ID, "source")).select_by_value("library:jazz")
        self.api("POST", "/libraries/jazz/albums", {"title": "Kind of Blue", "artist": "Miles Davis"}, expect=201)
        self.until(lambda: self.names() == ["Kind of Blue - Miles Davis"], "Jazz shows its album")
        self.loaded()
        self.focus("manage")
        self.key(Keys.ENTER)
        self.until(lambda: self.js("return document.querySelector('#libraries-list li[data-id=jazz] .danger')") is not None, "the dialog lists Jazz")
        self.driver.find_element(By.CSS_SELECTOR, "#libraries-list li[data-id=jazz] .danger").send_keys(Keys.ENTER)
        confirm = lambda: self.driver.find_element(By.ID, "libraries-confirm")
        self.until(lambda: confirm().is_displayed() and "was not deleted" in confirm().text, "the 409 is explained")
        if self.js("return document.activeElement.id") != "libraries-keep":
            raise Failure("the confirm does not focus Keep it")
        self.shot("app-libraries-409.png")
        self.driver.find_element(By.ID, "libraries-force").send_keys(Keys.ENTER)
        self.until(lambda: "Deleted “Jazz & Blues”" in note(), f"Delete anyway deletes it ({note()!r})")
        self.api("GET", "/libraries/jazz", token=False, expect=404)
        self.key(Keys.ESCAPE)
        self.until(lambda: self.js("return document.getElementById('source').value") == "library:default", "the switcher is back on default")
        self.until(lambda: len(self.names()) == 5, "default's albums are shown again")
        self.loaded()
        if any(value == "library:jazz" for value, _ in switcher()):
            raise Failure("the switcher still lists Jazz")

    def add_with_an_error_then_at_a_position(self):
        self.focus("add")
        self.key(Keys.ENTER)
        self.until(lambda: self.js("return document.getElementById('add-dialog').open"), "the Add dialog opens")
        form = self.driver.find_element(By.ID, "add-form")
        field = lambda name: form.find_element(By.NAME, name)
        field("artist").send_keys("Miles Davis")
        field("year").send_keys("nineteen")
        field("artist").send_keys(Keys.ENTER)
        self.until(lambda: self.js("return !document.getElementById('title-error').hidden"), "the title's error is shown beside it")
        for name in ["title", "year"]:
            text = self.js(f"return document.getElementById('{name}-error').textContent")
            if not text or self.js(f"return document.querySelector('#add-form [name={name}]').getAttribute('aria-invalid')") != "true":
                raise Failure(f"no error beside {name}")
        if self.js("return document.activeElement.name") != "title":
            raise Failure("focus is not on the first field in error")
        self.shot("app-add-error.png")
        self.key("Kind of Blue")
        field("year").clear()
        field("year").send_keys("1959")
        field("genre").send_keys("Jazz")
        field("coverUrl").send_keys(f"{self.cover_base}/missing.png")
        field("index").send_keys("1", Keys.ENTER)
        self.until(lambda: not self.js("return document.getElementById('add-dialog').open"), "the dialog closes")
        self.until(lambda: self.names()[1:2] == ["Kind of Blue - Miles Davis"], "the album is shown at position 1")
        self.until(lambda: self.selected_name() == "Kind of Blue - Miles Davis", "the new album is selected")
        at = self.api("GET", "/albums/at/1", token=False, expect=200)
        if at["title"] != "Kind of Blue":
            raise Failure(f"the server has {at['title']} at 1")
        self.until(lambda: self.js("return document.querySelector('#covers [aria-selected=true] .cover').dataset.state") == "failed",
                   "the missing cover fails")
        self.kind_of_blue = self.selected_id()
        self.a_failed_cover_shows_the_monogram(self.kind_of_blue, "KO")

    def a_failed_cover_shows_the_monogram(self, album_id, initials):
        """The failed cover: the album's initials on its artist's colour, the reason only in the
        tooltip and in the option's description (screen readers), never as text on screen."""
        got = self.js("""const o = document.getElementById('album-' + arguments[0]);
            const f = o.querySelector('.cover');
            const note = document.getElementById(o.getAttribute('aria-describedby') || '');
            return { text: f.innerText.trim(), title: f.title, note: note && note.textContent,
                     noteVisible: note ? note.getBoundingClientRect().width > 1 : null,
                     colour: getComputedStyle(f.querySelector('.monogram')).color,
                     background: getComputedStyle(f).backgroundColor,
                     visible: [...document.querySelectorAll('#covers .cover, #covers .title, #covers .artist')].map(e => e.innerText).join(' ') }""", album_id)
        if got["text"] != initials:
            raise Failure(f"the placeholder shows {got['text']!r}, not the initials {initials!r}")
        if not got["title"].startswith("Cover unavailable") or got["note"] != got["title"]:
            raise Failure(f"the reason is not in the tooltip and the description: {got}")
        if got["noteVisible"] or "unavailable" in got["visible"]:
            raise Failure(f"the reason is shown on screen: {got}")
        if got["colour"] != "rgb(255, 255, 255)" or got["background"] in ("rgba(0, 0, 0, 0)", "rgb(255, 255, 255)"):
            raise Failure(f"the monogram is {got['colour']} on {got['background']}")

    def cover_requests(self, album_id):
        self.collect_logs()
        return len([url for url in self.requests if f"/albums/{album_id}/cover" in url])

    def a_failed_cover_is_tried_again_on_the_next_view(self):
        # Once out of view and back (the covers hidden, as the list view does), the failed cover
        # is asked for once more, not in a loop; once it exists, the next view shows it.
        album_id = self.kind_of_blue
        state = lambda: self.js("return document.getElementById('album-' + arguments[0]).querySelector('.cover').dataset.state", album_id)
        self.shot("app-cover-monogram.png")
        before = self.cover_requests(album_id)
        hide_and_show = "const c = document.getElementById('covers'); c.hidden = true; requestAnimationFrame(() => requestAnimationFrame(() => { c.hidden = false; }))"
        self.js(hide_and_show)
        self.until(lambda: self.cover_requests(album_id) == before + 1, "the failed cover is asked for again when back in view")
        self.until(lambda: state() == "failed", "it fails again (the cover still does not exist)")
        # A change made elsewhere arrives (time passes); the failed cover was not asked for meanwhile.
        marker = self.api("POST", "/albums", {"title": "No Loop", "artist": "Patient", "index": 0}, expect=201)
        self.until(lambda: self.names()[:1] == ["No Loop - Patient"], "the marker arrives")
        self.api("DELETE", f"/albums/{marker['id']}", expect=200)
        self.until(lambda: "No Loop - Patient" not in self.names(), "the marker's delete arrives")
        if self.cover_requests(album_id) != before + 1:
            raise Failure(f"the failed cover was asked for {self.cover_requests(album_id) - before} times, not once")
        # The cover comes to exist (and the server forgets its failure): the next view shows it.
        IMAGES["/missing.png"] = png(256, 256, (90, 90, 90))
        self.api("DELETE", f"/albums/{album_id}/cover", expect=204)
        self.js(hide_and_show)
        self.until(lambda: state() == "loaded", "the cover is shown on the next view")
        if self.js("return document.getElementById('cover-note-' + arguments[0]).textContent", album_id):
            raise Failure("a shown cover still has a failure description")

    def edit_form_open(self):
        return not self.js("return document.getElementById('edit-form').hidden")

    def edit_in_place(self):
        # F2 (or Edit) puts the selected album's fields in a form in place of its table; the
        # server's field errors appear beside the fields; Save sends only what changed.
        album_id = self.kind_of_blue
        self.focus("covers")
        self.until(lambda: self.selected_id() == album_id, "Kind of Blue is selected")
        self.key(Keys.F2)
        self.until(self.edit_form_open, "F2 opens the edit form")
        if self.js("return document.activeElement.name") != "title" or not self.js("return document.getElementById('details').hidden"):
            raise Failure("the edit form does not replace the table with the focus on Title")
        unnamed = self.js("""return [...document.querySelectorAll('#edit-form input, #edit-form button, #toolbar button, .toolbar button')]
            .filter(e => !(e.labels && e.labels.length ? e.labels[0].textContent.trim() : e.textContent.trim())).map(e => e.outerHTML)""")
        if unnamed:
            raise Failure(f"controls without a name: {unnamed[:3]}")
        form = self.driver.find_element(By.ID, "edit-form")
        field = lambda name: form.find_element(By.NAME, name)
        if field("title").get_attribute("value") != "Kind of Blue" or field("year").get_attribute("value") != "1959":
            raise Failure("the edit form does not hold the album's fields")
        field("year").clear()
        field("year").send_keys("nineteen", Keys.ENTER)
        self.until(lambda: self.js("return !document.getElementById('edit-year-error').hidden"), "the year's error is shown beside it")
        if self.js("return document.querySelector('#edit-form [name=year]').getAttribute('aria-invalid')") != "true" \
                or self.js("return document.activeElement.name") != "year":
            raise Failure("the field in error is not marked and focused")
        self.shot("app-edit-error.png")
        field("year").clear()
        field("year").send_keys("1959")
        field("genre").clear()
        field("genre").send_keys("Modal Jazz")
        field("coverUrl").clear()
        field("coverUrl").send_keys(f"{self.cover_base}/cover-2.png", Keys.ENTER)
        self.until(lambda: not self.edit_form_open(), "Save closes the form")
        album = self.api("GET", f"/albums/{album_id}", token=False, expect=200)
        if album["genre"] != "Modal Jazz" or album["year"] != 1959 or not album["coverUrl"].endswith("/cover-2.png"):
            raise Failure(f"the server has {album}")
        self.until(lambda: "Modal Jazz" in self.table(), "the table shows the new genre")
        # The new cover URL: the server fetches it, and it is shown beside the details and in the scroller.
        self.until(lambda: self.js("return document.getElementById('detail-cover').dataset.state") == "loaded", "the new cover is shown beside the details")
        self.until(lambda: self.js("return document.querySelector('#album-' + arguments[0] + ' .cover').dataset.state", album_id) == "loaded",
                   "the new cover is shown in the scroller")
        if self.js("return document.activeElement.id") != "edit":
            raise Failure("the focus does not go back to Edit after saving")
        self.shot("app-edit-saved.png")
        # Changed elsewhere while the form is open: 412; the form shows the album as it is now
        # and says so; the other change is not overwritten.
        self.key(Keys.ENTER)
        self.until(self.edit_form_open, "Edit (Enter) opens the form again")
        self.api("PATCH", f"/albums/{album_id}", {"title": "Kind of Blue (Legacy)"}, expect=200)
        field("title").clear()
        field("title").send_keys("Kind of Green", Keys.ENTER)
        self.until(lambda: "changed this album meanwhile" in self.js("return document.getElementById('edit-note').textContent"),
                   "a change made meanwhile is reported")
        self.until(lambda: field("title").get_attribute("value") == "Kind of Blue (Legacy)", "the form shows the current title")
        if self.api("GET", f"/albums/{album_id}", token=False)["title"] != "Kind of Blue (Legacy)":
            raise Failure("the change made meanwhile was overwritten")
        self.shot("app-edit-conflict.png")
        self.key(Keys.ESCAPE)
        self.until(lambda: not self.edit_form_open(), "Escape closes the form")
        if self.js("return document.activeElement.id") != "edit":
            raise Failure("the focus does not go back to Edit after Escape")

    # A drag of album `fromId` onto `toId`'s near or far side (`after`), dropped or only hovered:
    # covers (prefix `album-`) sit in a row, so the side is by x; list rows (`row-`) by y.
    DRAG_JS = """
        const [prefix, fromId, toId, after, drop] = arguments;
        const from = document.getElementById(prefix + fromId), to = document.getElementById(prefix + toId);
        const box = to.getBoundingClientRect();
        const at = prefix === 'album-'
            ? { clientX: after ? box.right - 4 : box.left + 4, clientY: box.top + 10 }
            : { clientX: box.left + 20, clientY: after ? box.bottom - 4 : box.top + 4 };
        const data = new DataTransfer();
        const fire = (element, type) => element.dispatchEvent(new DragEvent(type, { bubbles: true, cancelable: true, dataTransfer: data, ...at }));
        if (!from.draggable) return { draggable: false };
        fire(from, 'dragstart');
        fire(to, 'dragenter');
        const accepted = !fire(to, 'dragover');
        const mark = to.classList.contains(after ? 'drop-after' : 'drop-before');
        if (drop) { fire(to, 'drop'); fire(from, 'dragend'); }
        return { accepted, mark };
    """

    def reorder_by_keyboard_and_drag_then_undo(self):
        # Alt+Right moves the selected album one place later (one POST /albums/{id}/move per
        # press), Alt+Left earlier; the selection follows it; Undo puts it back, one move a time.
        # Then drag and drop (DragEvents dispatched as Chromium's would be): one move per drop.
        url = self.driver.current_url
        order = lambda: [a["id"] for a in self.api("GET", "/albums?limit=50", token=False, expect=200)["items"]]
        before = order()
        self.focus("covers")
        self.key(Keys.HOME)
        first = self.names()[0]
        self.until(lambda: self.selected_name() == first, "Home selects the first album")
        self.collect_logs()
        seen = len(self.requests)
        self.key(Keys.ALT, Keys.ARROW_RIGHT)
        self.until(lambda: self.names()[1] == first and order()[1] == before[0], "Alt+Right moves the first album to the second place")
        self.until(lambda: "Moved" in self.js("return document.getElementById('banner').textContent"), "the move is announced")
        self.shot("app-reorder.png")
        self.key(Keys.ALT, Keys.ARROW_RIGHT)
        self.until(lambda: self.names()[2] == first and order()[2] == before[0], "Alt+Right again: the third place")
        if self.selected_name() != first or self.js("return document.activeElement.id") != "covers":
            raise Failure("the moved album is not still selected, with the focus on the covers")
        self.key(Keys.ALT, Keys.ARROW_LEFT)
        self.until(lambda: self.names()[1] == first and order()[1] == before[0], "Alt+Left moves it back one place")
        if self.driver.current_url != url:
            raise Failure(f"Alt+Left navigated the browser to {self.driver.current_url}")
        self.collect_logs()
        moves = [u for u in self.requests[seen:] if u.endswith("/move")]
        if len(moves) != 3:
            raise Failure(f"{len(moves)} move requests for three key presses")
        self.focus("undo")
        self.key(Keys.ENTER)
        self.until(lambda: self.names()[2] == first and order()[2] == before[0], "Undo undoes the last move")
        self.until(lambda: not self.js("return document.getElementById('undo').disabled"), "Undo is enabled again")
        self.key(Keys.ENTER)
        self.until(lambda: self.names()[1] == first and order()[1] == before[0], "Undo undoes the move before")
        self.until(lambda: not self.js("return document.getElementById('undo').disabled"), "Undo is enabled again")
        self.key(Keys.ENTER)
        self.until(lambda: order() == before and self.names()[0] == first, "Undo restores the order")
        # The first album dragged onto the right half of the third: it lands third (index 2).
        self.collect_logs()
        seen = len(self.requests)
        ids = [self.js("return [...document.querySelectorAll('#covers [role=option]')].map(o => o.dataset.id)")][0]
        hover = self.js(self.DRAG_JS, 'album-', ids[0], ids[2], True, False)
        if hover != {"accepted": True, "mark": True}:
            raise Failure(f"dragging over the third cover: {hover}")
        self.shot("app-drag.png")
        self.js("document.getElementById('covers').dispatchEvent(new DragEvent('dragend', { bubbles: true }))")
        self.js(self.DRAG_JS, 'album-', ids[0], ids[2], True, True)
        self.until(lambda: order()[:3] == [ids[1], ids[2], ids[0]] and self.names()[2] == first, "the drop moves the first album to the third place")
        if self.selected_name() != first or self.js("return document.querySelectorAll('#covers .drop-before, #covers .drop-after').length"):
            raise Failure("after the drop the album is not selected, or a drop mark stays")
        self.collect_logs()
        moves = [u for u in self.requests[seen:] if u.endswith("/move")]
        if len(moves) != 1:
            raise Failure(f"{len(moves)} move requests for one drop")
        self.until(lambda: not self.js("return document.getElementById('undo').disabled"), "Undo is enabled")
        self.focus("undo")
        self.key(Keys.ENTER)
        self.until(lambda: order() == before and self.names()[0] == first, "Undo puts the dropped album back")

    def reload_restores_the_selection(self):
        self.focus("covers")
        self.key(Keys.END)
        last = self.names()[-1]
        self.until(lambda: self.selected_name() == last, "End selects the last album")
        chosen = self.selected_id()
        client = self.js("return localStorage.getItem('bluelibrary.client')")
        self.until(lambda: self.api("GET", f"/state?client={client}", token=False)["albumID"] == chosen,
                   "the selection is saved with PUT /state")
        self.driver.refresh()
        self.loaded()
        self.until(lambda: self.selected_id() == chosen, "the reload selects the saved album")

    def a_second_window_sees_changes(self):
        first = self.driver.current_window_handle
        self.driver.switch_to.new_window("window")
        second = self.driver.current_window_handle
        self.driver.get(self.app_base + "/app/")
        self.loaded()
        count = len(self.names())
        # A change in the first window...
        self.driver.switch_to.window(first)
        victim = self.names()[0]
        self.focus("covers")
        self.key(Keys.HOME)
        self.until(lambda: self.selected_name() == victim, "Home selects the first album")
        self.focus("delete")
        self.key(Keys.ENTER)
        self.until(lambda: victim not in self.names(), "the first window deletes it")
        self.driver.switch_to.window(second)
        self.until(lambda: victim not in self.names() and len(self.names()) == count - 1, "the second window sees the delete")
        # ... and one made with curl.
        self.api("POST", "/albums", {"title": "Blue Train", "artist": "John Coltrane", "year": 1957, "index": 0}, expect=201)
        self.until(lambda: self.names()[:1] == ["Blue Train - John Coltrane"], "the second window sees the curl add")
        self.driver.switch_to.window(first)
        self.until(lambda: self.names()[:1] == ["Blue Train - John Coltrane"], "the first window sees the curl add")
        # A cover given elsewhere is shown without a reload.
        blue_train = self.api("GET", "/albums/at/0", token=False, expect=200)
        first_cover = "return document.querySelector('#covers [role=option]').querySelector('.cover img') !== null"
        if self.js(first_cover):
            raise Failure("Blue Train shows a cover before it has one")
        self.api("PATCH", f"/albums/{blue_train['id']}", {"coverUrl": f"{self.cover_base}/cover-3.png"}, expect=200)
        self.until(lambda: self.js(first_cover), "the new cover is shown")
        # A changed cover replaces the old image (same thumbnail URL: not the browser's cached bytes).
        pixel = """const i = document.querySelector('#covers [role=option] .cover img');
            if (!i || !i.complete) return null;
            const c = document.createElement('canvas'); c.width = c.height = 1;
            const g = c.getContext('2d'); g.drawImage(i, 64, 64, 1, 1, 0, 0, 1, 1);
            return [...g.getImageData(0, 0, 1, 1).data.slice(0, 3)]"""
        dominant = lambda: (lambda rgb: rgb and max(range(3), key=lambda k: rgb[k]))(self.js(pixel))
        self.until(lambda: dominant() == 0 and self.js(pixel)[1] > 100, "the first cover is orange (cover-3)")
        self.api("PATCH", f"/albums/{blue_train['id']}", {"coverUrl": f"{self.cover_base}/cover-0.png"}, expect=200)
        self.until(lambda: dominant() == 2, "the changed cover (blue, cover-0) replaces the orange one")
        self.driver.switch_to.window(second)
        self.collect_logs()
        self.driver.close()
        self.driver.switch_to.window(first)

    def switcher_pages_and_views(self):
        # A second library of 120 albums (scripts/bench-dataset.py) and a view over both.
        self.api("POST", "/libraries", {"id": "big", "name": "Big"}, expect=201)
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, "big.json")
            subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "bench-dataset.py"), "120", path],
                           check=True, capture_output=True)
            with open(path, encoding="utf-8") as file:
                archive = json.load(file)
        archive["library"] = "big"
        self.api("PUT", "/libraries/big/archive", archive)
        if self.api("GET", "/libraries/big", token=False, expect=200)["albumCount"] != 120:
            raise Failure("the archive did not load 120 albums")
        self.api("POST", "/views", {"id": "both", "name": "Both", "sources": ["default", "big"]}, expect=201)
        self.driver.refresh()
        self.loaded()
        Select(self.driver.find_element(By.ID, "source")).select_by_value("library:big")
        self.until(lambda: self.loaded_count() == 50, "the switcher shows the first page of Big")
        self.loaded()
        # The covers are virtualised: the strip is as wide as 120 covers, only those in view are in the DOM.
        positions = lambda: self.js("""return [...document.querySelectorAll('#covers [role=option]')]
            .map(o => [o.id, Number(o.getAttribute('aria-posinset')), Number(o.getAttribute('aria-setsize'))])""")
        if not 0 < len(positions()) < 30 or {p[2] for p in positions()} != {120}:
            raise Failure(f"covers in the DOM for 120 albums (want fewer than 30, each of a set of 120): {positions()}")
        # Infinite scroll: scrolling to the end loads the next pages (cursor paging).
        def scrolled_to_the_end():
            self.js("const c = document.getElementById('covers'); c.scrollLeft = c.scrollWidth")
            return self.loaded_count() == 120 and positions() and positions()[-1][1] == 120
        self.until(scrolled_to_the_end, "scrolling loads all 120 albums and shows the last")
        shown = positions()
        ids = [p[0] for p in shown]
        if len(set(ids)) != len(ids) or len(ids) >= 30 or [p[1] for p in shown] != list(range(shown[0][1], 121)):
            raise Failure(f"the covers at the end are not the last ones, each once, in order: {shown}")
        last = self.api("GET", "/libraries/big/albums/at/119", token=False, expect=200)
        if self.names()[-1] != f"{last['title']} - {last['artist']}":
            raise Failure(f"the last cover is {self.names()[-1]}, not {last['title']}")
        # A view: one list over both; a change in a source outdates it (the banner offers a reload).
        Select(self.driver.find_element(By.ID, "source")).select_by_value("view:both")
        default_names = [f"{a['title']} - {a['artist']}" for a in self.api("GET", "/albums", token=False)["items"]]
        self.until(lambda: self.names()[:len(default_names)] == default_names and self.loaded_count() >= 50,
                   "the view shows default's albums, then Big's")
        self.loaded()
        self.api("POST", "/libraries/big/albums", {"title": "Giant Steps", "artist": "John Coltrane", "index": 0}, expect=201)
        self.until(lambda: self.js("return document.documentElement.dataset.state") == "outdated", "the view is outdated")
        banner = self.driver.find_element(By.ID, "banner")
        if "reload" not in banner.text.lower():
            raise Failure(f"the outdated banner says {banner.text!r}")
        self.shot("app-view-outdated.png")
        banner.find_element(By.TAG_NAME, "button").send_keys(Keys.ENTER)
        self.until(lambda: self.js("return document.documentElement.dataset.state") == "loaded", "Reload loads the view again")
        Select(self.driver.find_element(By.ID, "source")).select_by_value("library:default")
        self.loaded()
        # Back on default, its covers load (those of the libraries left behind do not hold the slots).
        self.until(lambda: self.js("""return [...document.querySelectorAll('#covers .cover')].slice(0, 4)
            .every(c => c.dataset.state !== 'loading')"""), "the covers in view are loaded again")
        # Switching fast (Big, the view, then default, before Big's answers came): only default
        # is opened, with one event stream; the superseded ones neither load nor start a stream.
        # Counted from when default's present stream is live, so its own request (which may come
        # after the list and covers on a loaded machine) is not taken for a new one.
        self.until(lambda: self.js("return document.documentElement.dataset.live") == "live", "default's stream is live")
        self.collect_logs()
        seen = len(self.requests)
        self.js("""const s = document.getElementById('source');
                   for (const v of ['library:big', 'view:both', 'library:default']) { s.value = v; s.dispatchEvent(new Event('change')); }""")
        default_names = [f"{a['title']} - {a['artist']}" for a in self.api("GET", "/albums", token=False)["items"]]
        self.until(lambda: self.names() == default_names, "the last choice (default) is shown")
        self.loaded()
        self.api("POST", "/libraries/big/albums", {"title": "Wrong Library", "artist": "Big Band", "index": 0}, expect=201)
        self.api("POST", "/albums", {"title": "Right Library", "artist": "Small Band", "index": 0}, expect=201)
        self.until(lambda: self.names()[:1] == ["Right Library - Small Band"], "default's change arrives")
        self.collect_logs()
        later = self.requests[seen:]
        streams = [url for url in later if "/events" in url]
        others = [url for url in later if "/libraries/big/" in url or "/views/" in url]
        if streams != [self.app_base + "/events"] or others:
            raise Failure(f"after switching fast: event streams {streams}, other sources' requests {others[:5]}")
        if "Wrong Library - Big Band" in self.names():
            raise Failure("Big's change was merged into default's list")

    def manage_views(self):
        # The dialog's Views part, by keyboard: a view without libraries is refused (the error
        # beside them), one over Big and default is created (the switcher lists it), Both is
        # edited (renamed, default taken out: it then shows Big's albums only), Mix deleted.
        dialog_open = lambda: self.js("return document.getElementById('libraries-dialog').open")
        switcher = lambda: self.js("return [...document.querySelectorAll('#source option')].map(o => [o.value, o.textContent])")
        note = lambda: self.driver.find_element(By.ID, "libraries-note").text
        self.focus("manage")
        self.key(Keys.ENTER)
        self.until(dialog_open, "the dialog opens")
        self.until(lambda: self.js("return [...document.querySelectorAll('#views-list li')].map(l => l.dataset.view)") == ["both"],
                   "the dialog lists the view Both")
        both = lambda: self.js("""const l = document.querySelector('#views-list li[data-view=both]');
            return [l.querySelector('input[name=name]').getAttribute('aria-label'), l.querySelector('legend').textContent,
                    [...l.querySelectorAll('input:checked')].map(b => b.value)]""")
        if both() != ["Name of view both", "Libraries of Both", ["default", "big"]]:
            raise Failure(f"Both's row: {both()}")
        self.every_control_is_named("the Libraries and views dialog")
        field = self.driver.find_element(By.CSS_SELECTOR, "#view-create [name=id]")
        field.send_keys("mix", Keys.TAB, "Mix", Keys.ENTER)
        self.until(lambda: self.js("return document.getElementById('view-sources').getAttribute('aria-invalid')") == "true"
                   and self.driver.find_element(By.ID, "view-sources-error").is_displayed(), "a view without libraries is refused beside them")
        if self.js("return document.activeElement.name") != "source":
            raise Failure("the refusal does not focus the libraries")
        self.shot("app-views-error.png")
        # Space ticks the focused box (Big: the libraries are listed by id); Tab passes Big's
        # Down (its Up is disabled, first) to default's box, Space ticks it; Tab and Enter on
        # default's Up put it first.
        self.key(Keys.SPACE)
        self.key(Keys.TAB, Keys.TAB, Keys.SPACE)
        self.key(Keys.TAB)
        if self.js("return document.activeElement.getAttribute('aria-label')") != "Move default up in the new view":
            raise Failure(f"Tab from default's box reaches {self.js('return document.activeElement.outerHTML')}")
        self.key(Keys.ENTER)
        if self.js("return [...document.querySelectorAll('#view-sources input')].map(b => b.value)") != ["default", "big"]:
            raise Failure("Up did not put default first")
        self.driver.find_element(By.CSS_SELECTOR, "#view-create [type=submit]").send_keys(Keys.ENTER)
        self.until(lambda: "Created view “Mix”" in note(), f"the view is created ({note()!r})")
        self.until(lambda: ["view:mix", "Mix"] in switcher(), "the switcher lists Mix")
        if self.api("GET", "/views/mix", token=False, expect=200)["sources"] != ["default", "big"]:
            raise Failure("Mix is not over default then Big")
        name = self.driver.find_element(By.CSS_SELECTOR, "#views-list li[data-view=both] input[name=name]")
        name.send_keys(Keys.CONTROL, "a")
        name.send_keys("Big only")
        self.driver.find_element(By.CSS_SELECTOR, "#views-list li[data-view=both] input[value=default]").send_keys(Keys.SPACE)
        self.shot("app-views.png")
        self.driver.find_element(By.CSS_SELECTOR, "#views-list li[data-view=both] [type=submit]").send_keys(Keys.ENTER)
        self.until(lambda: "Saved view “Big only”" in note(), f"the view is saved ({note()!r})")
        view = self.api("GET", "/views/both", token=False, expect=200)
        if view["name"] != "Big only" or view["sources"] != ["big"]:
            raise Failure(f"the view is now {view}")
        self.until(lambda: ["view:both", "Big only"] in switcher(), "the switcher has the new name")
        self.driver.find_element(By.CSS_SELECTOR, "#views-list li[data-view=mix] .danger").send_keys(Keys.ENTER)
        self.until(lambda: "Deleted view “Mix”" in note(), f"the view is deleted ({note()!r})")
        self.api("GET", "/views/mix", token=False, expect=404)
        self.key(Keys.ESCAPE)
        self.until(lambda: not dialog_open() and self.js("return document.activeElement.id") == "manage", "Escape closes the dialog")
        if any(value == "view:mix" for value, _ in switcher()):
            raise Failure("the switcher still lists Mix")
        Select(self.driver.find_element(By.ID, "source")).select_by_value("view:both")
        first = self.api("GET", "/libraries/big/albums/at/0", token=False, expect=200)
        self.until(lambda: self.names()[:1] == [f"{first['title']} - {first['artist']}"], "the edited view shows Big's albums only")
        self.loaded()
        self.api("PATCH", "/views/both", {"name": "Both", "sources": ["default", "big"]}, expect=200)
        Select(self.driver.find_element(By.ID, "source")).select_by_value("library:default")
        self.loaded()

    def views_reorder_and_filter(self):
        # A view's libraries reordered with Up and Down, and its filter edited, by keyboard: a
        # year range the wrong way round is refused beside Year from (nothing saved); then genre
        # Jazz is saved with the new order, while someone renames the view meanwhile (the note
        # says so, and their name stays); the view then shows Big's Jazz albums first.
        dialog_open = lambda: self.js("return document.getElementById('libraries-dialog').open")
        note = lambda: self.driver.find_element(By.ID, "libraries-note").text
        row = "#views-list li[data-view=both]"
        order = lambda: self.js(f"return [...document.querySelectorAll('{row} .source-row input')].map(b => [b.value, b.checked])")
        self.focus("manage")
        self.key(Keys.ENTER)
        self.until(lambda: dialog_open() and order() == [["default", True], ["big", True]], "the dialog lists Both over default then Big")
        self.driver.find_element(By.CSS_SELECTOR, f"{row} input[value=big]").send_keys(Keys.TAB)
        if self.js("return document.activeElement.getAttribute('aria-label')") != "Move Big up in Both":
            raise Failure(f"Tab from Big's box reaches {self.js('return document.activeElement.outerHTML')}")
        self.key(Keys.ENTER)
        self.until(lambda: order() == [["big", True], ["default", True]], "Up puts Big first")
        # Big is first now: its Up is disabled, the focus is on its Down.
        if self.js("return document.activeElement.getAttribute('aria-label')") != "Move Big down in Both":
            raise Failure("the focus did not stay on Big's buttons")
        status = self.js("return document.getElementById('views-status').textContent")
        if status != "Big moved up: 1 of 2 in Both.":
            raise Failure(f"the move is not said: {status!r}")
        labels = self.js(f"return [...document.querySelectorAll('{row} .view-filter input')].map(i => [i.name, i.labels[0].textContent.trim()])")
        if labels != [["filter.q", "Text"], ["filter.artist", "Artist"], ["filter.genre", "Genre"], ["filter.yearFrom", "Year from"], ["filter.yearTo", "Year to"]]:
            raise Failure(f"the filter's fields are {labels}")
        self.every_control_is_named("the views dialog's order and filter")
        self.driver.find_element(By.CSS_SELECTOR, f"{row} [name='filter.yearFrom']").send_keys("2000", Keys.TAB, "1990", Keys.ENTER)
        error = f"view-both-filter-yearFrom-error"
        self.until(lambda: self.js(f"return document.getElementById('{error}').hidden") is False
                   and self.js("return document.activeElement.name") == "filter.yearFrom", "the 422 is shown beside Year from, focused")
        if not self.js(f"return document.querySelector(\"{row} [name='filter.yearFrom']\").getAttribute('aria-invalid') === 'true'") \
                or "yearTo" not in self.driver.find_element(By.ID, error).text:
            raise Failure(f"the error beside Year from: {self.driver.find_element(By.ID, error).text!r}")
        if self.js(f"return document.querySelector(\"{row} [name='filter.yearFrom']\").getAttribute('aria-describedby')") != error:
            raise Failure("Year from is not described by its error")
        view = self.api("GET", "/views/both", token=False, expect=200)
        if view["sources"] != ["default", "big"] or view["filter"]:
            raise Failure(f"a refused save changed the view: {view}")
        self.shot("app-views-filter-error.png")
        # The same state at phone width, light and dark: nothing wider than the screen.
        self.driver.set_window_size(390, 844)
        self.js(f"document.getElementById('{error}').scrollIntoView({{block: 'center'}})")
        width = self.js("const d = document.getElementById('libraries-dialog').getBoundingClientRect(); return [d.left, d.right, window.innerWidth]")
        if width[0] < 0 or width[1] > width[2]:
            raise Failure(f"the views dialog is wider than a phone's screen: {width}")
        self.shot("app-phone-views-filter-error.png")
        self.driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "dark"}]})
        self.shot("app-phone-dark-views-filter-error.png")
        self.driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})
        self.driver.set_window_size(1280, 800)
        # Someone renames the view meanwhile; the dialog saves its order and the genre.
        self.api("PATCH", "/views/both", {"name": "Both renamed"}, expect=200)
        for name in ("filter.yearFrom", "filter.yearTo"):
            field = self.driver.find_element(By.CSS_SELECTOR, f"{row} [name='{name}']")
            field.send_keys(Keys.CONTROL, "a")
            field.send_keys(Keys.DELETE)
        self.driver.find_element(By.CSS_SELECTOR, f"{row} [name='filter.genre']").send_keys("Jazz", Keys.ENTER)
        self.until(lambda: "Saved view “Both renamed”. It had been changed elsewhere" in note(), f"the save is said, and the change meanwhile ({note()!r})")
        view = self.api("GET", "/views/both", token=False, expect=200)
        if view["name"] != "Both renamed" or view["sources"] != ["big", "default"] or view["filter"] != {"genre": "Jazz"}:
            raise Failure(f"the view is now {view}")
        if self.js(f"return document.querySelector(\"#views-list li[data-view=both] [name='filter.genre']\").value") != "Jazz":
            raise Failure("the dialog does not show the saved filter")
        self.key(Keys.ESCAPE)
        self.until(lambda: not dialog_open(), "Escape closes the dialog")
        Select(self.driver.find_element(By.ID, "source")).select_by_value("view:both")
        expected = [f"{a['title']} - {a['artist']}" for a in self.api("GET", "/views/both/albums?limit=5", token=False, expect=200)["items"]]
        if not expected or self.api("GET", "/views/both/albums?limit=1", token=False)["items"][0]["library"] != "big":
            raise Failure("the saved view does not start with Big's albums")
        self.until(lambda: self.names()[:len(expected)] == expected, f"the view shows Big's Jazz albums first ({expected[:2]}…)")
        self.loaded()
        self.api("PATCH", "/views/both", {"name": "Both", "sources": ["default", "big"], "filter": None}, expect=200)
        Select(self.driver.find_element(By.ID, "source")).select_by_value("library:default")
        self.loaded()

    def the_first_page_is_asked_for_first(self):
        # The first screen's requests (Resource Timing of the first visit): first.js ran before
        # main.js and asked for the first page before the key's rights, the libraries and the
        # views; every module the app imports is in index.html as a script or a modulepreload,
        # so no import waits for the module that names it.
        marks = self.js("return performance.getEntriesByType('mark').map(m => [m.name, m.startTime])")
        names = [name for name, _ in marks]
        if names[:2] != ["first.js runs", "main.js starts"]:
            raise Failure(f"the app's marks are {marks}")
        started = self.js("return performance.getEntriesByType('resource').map(e => [new URL(e.name).pathname + new URL(e.name).search, e.startTime])")
        def start(suffix):
            found = [at for path, at in started if path.split("/music", 1)[-1].startswith(suffix)]
            if not found:
                raise Failure(f"no request for {suffix}: {[p for p, _ in started][:20]}")
            return found[0]
        page = start("/albums?limit=50&count=true")
        later = {suffix: start(suffix) for suffix in ("/keys/self", "/libraries", "/views")}
        if any(at < page for at in later.values()):
            raise Failure(f"the first page was asked for at {page:.0f} ms, after {later}")
        with urllib.request.urlopen(self.app_base + "/app/index.html", timeout=10) as response:
            html = response.read().decode()
        loaded = set(re.findall(r'<script type="module" src="([\w.]+)"', html)) | set(re.findall(r'<link rel="modulepreload" href="([\w.]+)"', html))
        imported = set()
        for name in loaded | {"main.js"}:
            with urllib.request.urlopen(f"{self.app_base}/app/{name}", timeout=10) as response:
                imported |= set(re.findall(r"from '\./([\w.]+)'", response.read().decode()))
        if not imported or imported - loaded:
            raise Failure(f"modules imported but not preloaded by index.html: {sorted(imported - loaded)}")

    def a_far_jump_reads_by_offset(self):
        # A library of 2,000 albums in the list view, by keyboard: sorted by title, Ctrl+End
        # selects the last album read by offset; the scroll bar put on the 1,000th row shows the
        # server's 1,000th by title. In the library's order, the scroll bar on the 1,500th row:
        # one request by offset (no cursor walk from the start), fewer than 40 rows in the DOM;
        # scrolling on below walks the island's cursor, above it reads by offset; an album
        # deleted or added before them elsewhere; Ctrl+Home selects the first album again.
        self.api("POST", "/libraries", {"id": "far", "name": "Far"}, expect=201)
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, "far.json")
            subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "bench-dataset.py"), "2120", path],
                           check=True, capture_output=True)
            with open(path, encoding="utf-8") as file:
                archive = json.load(file)
        # The dataset is the same every time: its first 120 albums are Big's (ids are unique across libraries).
        archive["albums"] = archive["albums"][120:]
        archive["library"] = "far"
        self.api("PUT", "/libraries/far/archive", archive, expect=200)
        if self.api("GET", "/libraries/far", token=False, expect=200)["albumCount"] != 2000:
            raise Failure("the archive did not load 2,000 albums")
        self.driver.refresh()  # the switcher lists Far
        self.loaded()
        self.focus("show-list")
        self.key(Keys.ENTER)
        Select(self.driver.find_element(By.ID, "source")).select_by_value("library:far")
        self.loaded()
        self.until(lambda: self.grid_rows() and not any(r["busy"] for r in self.grid_rows()), "the first rows are shown")
        self.js("performance.setResourceTimingBufferSize(5000); performance.clearResourceTimings()")
        lists = lambda: self.js("return performance.getEntriesByType('resource').map(e => e.name).filter(n => n.includes('/libraries/far/albums?'))")
        def row_shown(index):
            return any(r["index"] == index + 2 and not r["busy"] for r in self.grid_rows())
        def expect_row(index, query=""):
            album = self.api("GET", f"/libraries/far/albums?limit=1&offset={index}{query}", token=False, expect=200)["items"][0]
            row = [r for r in self.grid_rows() if r["index"] == index + 2][0]
            if row["cells"][:2] != [album["title"], album["artist"]]:
                raise Failure(f"row {index + 1} shows {row['cells'][:2]}, not {album['title']} ({query or 'library order'})")
            return album
        # Sorted by title (Tab from the table to its Title header, Enter), then Ctrl+End.
        self.focus("album-grid")
        self.key(Keys.TAB, Keys.ENTER)
        self.until(lambda: self.js("return document.querySelector('#album-grid [data-column=title]').getAttribute('aria-sort')") == "ascending"
                   and self.js("return document.documentElement.dataset.state") == "loaded", "sorted by title")
        self.focus("album-grid")
        self.key(Keys.CONTROL, Keys.END)
        last = self.api("GET", "/libraries/far/albums?limit=1&offset=1999&sort=title", token=False, expect=200)["items"][0]
        self.until(lambda: self.js("return document.getElementById('album-grid').getAttribute('aria-activedescendant')") == f"row-{last['id']}",
                   "Ctrl+End selects the last album by title")
        self.until(lambda: self.table()[:2] == [last["artist"], last["title"]], "the details show it")
        if not any("offset=" in url and "sort=title" in url and "cursor=" not in url for url in lists()):
            raise Failure(f"the last album was not read by offset: {lists()}")
        self.js("document.getElementById('album-grid').scrollTop = 999 * 40")
        self.until(lambda: row_shown(999), "the 1,000th row by title is shown")
        expect_row(999, "&sort=title")
        # Back to the library's order (the header twice more), then the scroll bar far down.
        self.focus("album-grid")
        self.key(Keys.TAB, Keys.ENTER)
        self.key(Keys.ENTER)
        self.until(lambda: self.js("return document.querySelector('#album-grid [data-column=title]').getAttribute('aria-sort')") == "none"
                   and self.js("return document.documentElement.dataset.state") == "loaded", "back to the library's order")
        self.js("document.getElementById('album-grid').scrollTop = 0; performance.clearResourceTimings()")
        self.js("document.getElementById('album-grid').scrollTop = 1499 * 40")
        self.until(lambda: row_shown(1499), "the 1,500th row is shown")
        expect_row(1499)
        self.shot("app-list-far.png")
        jumps = [url for url in lists() if "offset=" in url]
        if len(jumps) != 1 or any("cursor=" in url for url in lists()) or len(self.grid_rows()) >= 40:
            raise Failure(f"the far row was not read by one offset page ({lists()}; {len(self.grid_rows())} rows in the DOM)")
        start = int(re.search(r"offset=(\d+)", jumps[0]).group(1))
        # Scrolling on below the island's 500: its cursor, no other offset.
        self.js(f"document.getElementById('album-grid').scrollTop = {start + 505} * 40")
        self.until(lambda: row_shown(start + 505), "a row below the island is shown")
        expect_row(start + 505)
        if not any("cursor=" in url for url in lists()) or len([url for url in lists() if "offset=" in url]) != 1:
            raise Failure(f"scrolling on below did not walk the island's cursor: {lists()}")
        # Above it: read by offset.
        self.js(f"document.getElementById('album-grid').scrollTop = {start - 30} * 40")
        self.until(lambda: row_shown(start - 30), "a row above the island is shown")
        expect_row(start - 30)
        if len([url for url in lists() if "offset=" in url]) != 2:
            raise Failure(f"the rows above the island were not read by offset: {lists()}")
        # Changes before the far rows, made elsewhere: a deletion moves them up one place (merged
        # live), an album added is not placed (the far rows are read again); either way the
        # 1,500th row shows what the server has there.
        self.js("document.getElementById('album-grid').scrollTop = 1499 * 40")
        self.until(lambda: row_shown(1499), "the 1,500th row is shown again")
        def row_is_the_servers(index):
            album = self.api("GET", f"/libraries/far/albums?limit=1&offset={index}", token=False, expect=200)["items"][0]
            return any(r["index"] == index + 2 and r["cells"][:2] == [album["title"], album["artist"]] for r in self.grid_rows())
        self.api("DELETE", "/libraries/far/albums/at/0", expect=200)
        self.until(lambda: row_is_the_servers(1499), "after a deletion before them, the far rows moved up one")
        self.api("POST", "/libraries/far/albums", {"title": "Added Before", "artist": "Far Away", "index": 0}, expect=201)
        self.until(lambda: row_is_the_servers(1499), "after an album added before them, the far rows are read again")
        self.focus("album-grid")
        self.key(Keys.CONTROL, Keys.HOME)
        first = self.api("GET", "/libraries/far/albums/at/0", token=False, expect=200)
        self.until(lambda: self.js("return document.getElementById('album-grid').getAttribute('aria-activedescendant')") == f"row-{first['id']}",
                   "Ctrl+Home selects the first album")
        Select(self.driver.find_element(By.ID, "source")).select_by_value("library:default")
        self.loaded()
        self.focus("show-covers")
        self.key(Keys.ENTER)
        self.api("DELETE", "/libraries/far?force=true", expect=204)

    # What a screen reader announces as a control (rows and groups are named by their content, or need no name).
    CONTROL_ROLES = {"button", "checkbox", "combobox", "textbox", "searchbox", "listbox", "option", "grid",
                     "progressbar", "dialog", "menuitem", "radio", "slider", "spinbutton", "link", "columnheader"}

    def unnamed_controls(self):
        """Controls in Chromium's accessibility tree (what a screen reader gets) without a name."""
        tree = self.driver.execute_cdp_cmd("Accessibility.getFullAXTree", {})["nodes"]
        unnamed = []
        for node in tree:
            role = node.get("role", {}).get("value")
            if node.get("ignored") or role not in self.CONTROL_ROLES:
                continue
            if not str(node.get("name", {}).get("value", "")).strip():
                unnamed.append(role)
        return unnamed

    def every_control_is_named(self, where):
        unnamed = self.unnamed_controls()
        if unnamed:
            raise Failure(f"controls without a name for screen readers ({where}): {unnamed}")

    def throttle(self, bytes_per_second):
        """Chromium's network emulation: uploads and downloads at `bytes_per_second` (None: off)."""
        self.driver.execute_cdp_cmd("Network.enable", {})
        self.driver.execute_cdp_cmd("Network.emulateNetworkConditions", {
            "offline": False, "latency": 0,
            "downloadThroughput": bytes_per_second or -1, "uploadThroughput": bytes_per_second or -1})

    # Records the progress bar's states, and takes the file an export saves (instead of a download).
    TRANSFER_WATCH_JS = """
        window.progressSeen = [];
        const bar = document.getElementById('transfer-progress');
        new MutationObserver(() => { if (bar.hasAttribute('aria-valuenow')) window.progressSeen.push(Number(bar.getAttribute('aria-valuenow'))); })
            .observe(bar, { attributes: true, attributeFilter: ['aria-valuenow'] });
        window.saved = null;
        const make = URL.createObjectURL;
        URL.createObjectURL = (blob) => { window.lastBlob = blob; return make(blob); };
        HTMLAnchorElement.prototype.click = function () {
            const name = this.download;
            window.lastBlob.text().then((text) => { window.saved = { name, text }; });
        };
    """

    def import_and_export(self):
        # The Import / export dialog on a library of its own, by keyboard: a CSV with a bad row
        # (the 422's problems listed, nothing imported), then 2,000 albums uploaded slowly (the
        # progress bar's aria-valuenow goes up), exported as CSV and as an archive (downloads
        # read as streams, with progress), and an archive of three imported after its confirm.
        self.api("POST", "/libraries", {"id": "imports", "name": "Imports"}, expect=201)
        self.driver.refresh()
        self.loaded()
        Select(self.driver.find_element(By.ID, "source")).select_by_value("library:imports")
        self.loaded()
        self.js(self.TRANSFER_WATCH_JS)
        dialog_open = lambda: self.js("return document.getElementById('transfer-dialog').open")
        note = lambda: self.driver.find_element(By.ID, "transfer-note").text
        self.focus("transfer")
        self.key(Keys.ENTER)
        self.until(dialog_open, "Import / export… opens the dialog")
        if self.js("return document.activeElement.name") != "file":
            raise Failure("the dialog does not focus the file field")
        self.every_control_is_named("the Import and export dialog")
        directory = tempfile.mkdtemp(prefix="bl-import-")
        bad = os.path.join(directory, "bad.csv")
        with open(bad, "w", encoding="utf-8") as file:
            file.write("title,artist,year\r\nKind of Blue,Miles Davis,1959\r\n,Nobody,1960\r\nBlue Train,John Coltrane,999\r\n")
        self.driver.find_element(By.CSS_SELECTOR, "#import-form [name=file]").send_keys(bad)
        self.driver.find_element(By.CSS_SELECTOR, "#import-form [type=submit]").send_keys(Keys.ENTER)
        problems = lambda: self.js("return [...document.querySelectorAll('#import-errors li')].map(l => l.textContent)")
        self.until(lambda: len(problems()) >= 2 and "failed" in note(), f"the bad rows are listed ({problems()}, {note()!r})")
        if not any("line 3" in p for p in problems()):
            raise Failure(f"the problems do not name their lines: {problems()}")
        if self.api("GET", "/libraries/imports", token=False, expect=200)["albumCount"] != 0:
            raise Failure("a refused CSV imported albums")
        self.shot("app-import-error.png")
        good = os.path.join(directory, "albums.csv")
        with open(good, "w", encoding="utf-8") as file:
            file.write("title,artist,genre,year\r\n")
            for i in range(2000):
                file.write(f"Imported album number {i:04},Artist {i % 97:02} of the import,Jazz,{1950 + i % 70}\r\n")
        self.driver.find_element(By.CSS_SELECTOR, "#import-form [name=file]").send_keys(good)
        self.js("window.progressSeen = []")
        self.throttle(40_000)
        try:
            self.driver.find_element(By.CSS_SELECTOR, "#import-form [type=submit]").send_keys(Keys.ENTER)
            self.until(lambda: any(0 < v < 100 for v in self.js("return window.progressSeen")), "the upload's progress is shown")
            self.shot("app-import-progress.png")
            label = self.js("""const b = document.getElementById('transfer-progress');
                return [b.labels[0] && b.labels[0].textContent, b.getAttribute('aria-labelledby'), document.getElementById('transfer-status').hidden]""")
            if not label[0] or not label[0].startswith("Uploading albums.csv") or label[2]:
                raise Failure(f"the progress bar has no name, or is hidden: {label}")
            self.every_control_is_named("an upload in progress")
            self.until(lambda: "Imported 2,000 albums" in note(), f"the import is said ({note()!r})")
        finally:
            self.throttle(None)
        seen = self.js("return window.progressSeen")
        if seen != sorted(seen) or len(set(seen)) < 3:
            raise Failure(f"the upload progress did not go up step by step: {seen}")
        if self.api("GET", "/libraries/imports", token=False, expect=200)["albumCount"] != 2000:
            raise Failure("the import did not add 2,000 albums")
        self.until(lambda: self.js("return document.querySelector('#covers [role=option]')?.getAttribute('aria-setsize')") == "2000",
                   "the covers show the imported library")
        # Export as CSV, slowly: the download's progress counts rows against the album count.
        self.js("window.progressSeen = []")
        self.throttle(60_000)
        try:
            self.driver.find_element(By.ID, "export-csv").send_keys(Keys.ENTER)
            self.until(lambda: any(0 < v < 100 for v in self.js("return window.progressSeen")), "the download's progress is shown")
            self.shot("app-export-progress.png")
            self.until(lambda: self.js("return window.saved"), "the CSV is saved")
        finally:
            self.throttle(None)
        saved = self.js("return window.saved")
        lines = saved["text"].strip().split("\r\n")
        if saved["name"] != "imports.csv" or len(lines) != 2001 or not lines[0].startswith("id,index,title,artist"):
            raise Failure(f"the CSV export is {saved['name']} with {len(lines)} lines: {lines[:2]}")
        self.until(lambda: "Exported “Imports” as imports.csv" in note(), f"the export is said ({note()!r})")
        self.js("window.saved = null")
        self.driver.find_element(By.ID, "export-archive").send_keys(Keys.ENTER)
        self.until(lambda: self.js("return window.saved"), "the archive is saved")
        archive = json.loads(self.js("return window.saved.text"))
        if archive.get("format") != "bluelibrary.archive" or len(archive["albums"]) != 2000:
            raise Failure("the archive export is not the library's 2,000 albums")
        # An archive replaces the library: only after its confirm.
        archive["albums"] = archive["albums"][:3]
        small = os.path.join(directory, "three.json")
        with open(small, "w", encoding="utf-8") as file:
            json.dump(archive, file)
        self.driver.find_element(By.CSS_SELECTOR, "#import-form [name=file]").send_keys(small)
        self.driver.find_element(By.CSS_SELECTOR, "#import-form [type=submit]").send_keys(Keys.ENTER)
        self.until(lambda: "tick the box" in note() and self.js("return document.activeElement.name") == "replace",
                   "an archive asks to confirm the replace")
        self.key(Keys.SPACE)
        self.driver.find_element(By.CSS_SELECTOR, "#import-form [type=submit]").send_keys(Keys.ENTER)
        self.until(lambda: "Replaced “Imports” with three.json: 3 albums" in note(), f"the archive replaces the library ({note()!r})")
        self.shot("app-import-archive.png")
        ActionChains(self.driver).send_keys(Keys.ESCAPE).perform()
        self.until(lambda: not dialog_open() and self.js("return document.activeElement.id") == "transfer", "Escape closes the dialog")
        expected = [f"{a['title']} - {a['artist']}" for a in archive["albums"]]
        self.until(lambda: self.names() == expected, "the replaced library is shown")
        Select(self.driver.find_element(By.ID, "source")).select_by_value("library:default")
        self.loaded()
        self.api("DELETE", "/libraries/imports?force=true", expect=204)

    def grid_rows(self):
        return self.js("""return [...document.querySelectorAll('#album-grid .grid-rows [role=row]')]
            .map(r => ({ index: Number(r.getAttribute('aria-rowindex')), busy: r.getAttribute('aria-busy') === 'true',
                         selected: r.getAttribute('aria-selected') === 'true', id: r.dataset.id || null,
                         cells: [...r.querySelectorAll('[role=gridcell]')].map(c => c.textContent) }))""")

    def a_list_view_sorts_and_scrolls(self):
        # The List button shows the albums as a table (remembered in this browser); only the
        # rows in view are in the DOM; scrolling loads the next pages; the column headers sort
        # with the server's `sort`; the keyboard moves the selection as in the covers.
        self.js("window.scrollTo(0, 0)")
        self.focus("show-list")
        self.key(Keys.ENTER)
        self.until(lambda: self.js("return !document.getElementById('album-grid').hidden && document.getElementById('covers').hidden"),
                   "List shows the table instead of the covers")
        if self.js("return [document.getElementById('show-list').getAttribute('aria-pressed'), localStorage.getItem('bluelibrary.layout'), document.activeElement.id]") \
                != ["true", "list", "album-grid"]:
            raise Failure("the List button is not pressed, remembered and focused on the table")
        Select(self.driver.find_element(By.ID, "source")).select_by_value("library:big")
        self.loaded()
        total = self.api("GET", "/libraries/big", token=False, expect=200)["albumCount"]
        self.until(lambda: self.js("return document.getElementById('album-grid').getAttribute('aria-rowcount')") == str(total + 1),
                   f"the table says it has {total} rows (and a header)")
        self.until(lambda: self.grid_rows() and not any(r["busy"] for r in self.grid_rows()), "the first rows are shown")
        in_dom = len(self.grid_rows())
        if in_dom >= 40:
            raise Failure(f"{in_dom} rows in the DOM for a table of {total}: not virtualised")
        # Scrolling to the end: the rows in view come as their pages load (cursor paging).
        self.js("const g = document.getElementById('album-grid'); g.scrollTop = g.scrollHeight")
        self.until(lambda: any(r["index"] == total + 1 and not r["busy"] for r in self.grid_rows()), "the last row is shown after scrolling")
        self.every_control_is_named("the list view")
        last = self.api("GET", f"/libraries/big/albums/at/{total - 1}", token=False, expect=200)
        row = [r for r in self.grid_rows() if r["index"] == total + 1][0]
        if row["cells"][:2] != [last["title"], last["artist"]] or len(self.grid_rows()) >= 40:
            raise Failure(f"the last row is {row['cells']}, not {last['title']} ({len(self.grid_rows())} rows in the DOM)")
        # Sorting: Title ascending, then descending, as the server sorts; then Year, then Genre.
        def shown_titles(n):
            rows = [r for r in self.grid_rows() if not r["busy"]]
            return [r["cells"][0] for r in rows[:n]]
        def expect_order(sort, header, state):
            expected = [a["title"] for a in self.api("GET", f"/libraries/big/albums?sort={sort}&limit=8", token=False, expect=200)["items"]]
            self.until(lambda: shown_titles(8) == expected and self.js(
                f"return document.querySelector('#album-grid [data-column={header}]').getAttribute('aria-sort')") == state,
                f"sort={sort} shows {expected[:3]}… ({state})")
        self.focus("album-grid")
        self.key(Keys.TAB)
        if self.js("return document.activeElement.textContent") != "Title":
            raise Failure("Tab from the table does not reach the Title header")
        self.key(Keys.ENTER)
        expect_order("title", "title", "ascending")
        self.key(Keys.ENTER)
        expect_order("-title", "title", "descending")
        self.shot("app-list-sorted.png")
        self.driver.find_element(By.CSS_SELECTOR, "#album-grid [data-column=year] button").click()
        expect_order("year", "year", "ascending")
        self.driver.find_element(By.CSS_SELECTOR, "#album-grid [data-column=year] button").click()
        self.driver.find_element(By.CSS_SELECTOR, "#album-grid [data-column=year] button").click()
        expect_order("position", "year", "none")
        # Genre, folded as the server sorts it, both ways, then the library's order again.
        genre = lambda: self.driver.find_element(By.CSS_SELECTOR, "#album-grid [data-column=genre] button")
        genre().click()
        expect_order("genre", "genre", "ascending")
        genre().click()
        expect_order("-genre", "genre", "descending")
        genre().click()
        expect_order("position", "genre", "none")
        # The keyboard: Home, Down; the selection is the table's active row and the details follow.
        self.focus("album-grid")
        self.key(Keys.HOME)
        self.key(Keys.ARROW_DOWN)
        second = self.api("GET", "/libraries/big/albums/at/1", token=False, expect=200)
        self.until(lambda: self.js("return document.getElementById('album-grid').getAttribute('aria-activedescendant')") == f"row-{second['id']}",
                   "Down selects the second row")
        self.until(lambda: self.table()[:2] == [second["artist"], second["title"]], "the details show the selected row")
        self.shot("app-list.png")
        # Remembered: a reload shows the list again.
        self.driver.refresh()
        self.loaded()
        if self.js("return document.getElementById('album-grid').hidden"):
            raise Failure("the list view is not remembered across a reload")
        Select(self.driver.find_element(By.ID, "source")).select_by_value("library:default")
        self.loaded()
        self.focus("show-covers")
        self.key(Keys.ENTER)
        self.until(lambda: self.js("return document.getElementById('album-grid').hidden && !document.getElementById('covers').hidden"),
                   "Covers shows the covers again")

    def list_rows_reorder_by_drag(self):
        # In the list view a row dragged onto another's lower half lands after it: one move
        # request per drop, and Undo puts it back; Alt+Down still moves by keyboard.
        order = lambda: [a["id"] for a in self.api("GET", "/albums?limit=50", token=False, expect=200)["items"]]
        before = order()
        self.focus("show-list")
        self.key(Keys.ENTER)
        self.until(lambda: self.grid_rows() and not any(r["busy"] for r in self.grid_rows()), "the list view shows default's rows")
        rows = lambda: [r["id"] for r in self.grid_rows()]
        self.until(lambda: rows()[:len(before)] == before, "the rows are in the library's order")
        self.collect_logs()
        seen = len(self.requests)
        hover = self.js(self.DRAG_JS, 'row-', before[0], before[2], True, False)
        if hover != {"accepted": True, "mark": True}:
            raise Failure(f"dragging the first row over the third: {hover}")
        self.shot("app-list-drag.png")
        self.js("document.getElementById('album-grid').dispatchEvent(new DragEvent('dragend', { bubbles: true }))")
        self.js(self.DRAG_JS, 'row-', before[0], before[2], True, True)
        self.until(lambda: order()[:3] == [before[1], before[2], before[0]] and rows()[:3] == [before[1], before[2], before[0]],
                   "the drop moves the first row to the third place")
        self.until(lambda: self.js("return document.getElementById('album-grid').getAttribute('aria-activedescendant')") == f"row-{before[0]}",
                   "the dropped row is selected")
        self.collect_logs()
        moves = [u for u in self.requests[seen:] if u.endswith("/move")]
        if len(moves) != 1:
            raise Failure(f"{len(moves)} move requests for one drop of a row")
        if self.js("return document.querySelectorAll('#album-grid .drop-before, #album-grid .drop-after').length"):
            raise Failure("a drop mark stays after the drop")
        self.until(lambda: not self.js("return document.getElementById('undo').disabled"), "Undo is enabled")
        self.focus("undo")
        self.key(Keys.ENTER)
        self.until(lambda: order() == before and rows()[:len(before)] == before, "Undo puts the dropped row back")
        # Alt+Down beside it, undone too.
        self.focus("album-grid")
        self.key(Keys.HOME)
        self.key(Keys.ALT, Keys.ARROW_DOWN)
        self.until(lambda: order()[1] == before[0] and rows()[1] == before[0], "Alt+Down moves the first row one place down")
        self.until(lambda: not self.js("return document.getElementById('undo').disabled"), "Undo is enabled")
        self.focus("undo")
        self.key(Keys.ENTER)
        self.until(lambda: order() == before and rows()[:len(before)] == before, "Undo restores the order")
        # Sorted, rows cannot be dragged: the drag is refused and the banner says why.
        self.driver.find_element(By.CSS_SELECTOR, "#album-grid [data-column=title] button").click()
        self.until(lambda: self.js("return document.querySelector('#album-grid [data-column=title]').getAttribute('aria-sort')") == "ascending"
                   and self.js("return document.documentElement.dataset.state") == "loaded", "sorted by title")
        ids = [r for r in rows() if r]
        refused = self.js(self.DRAG_JS, 'row-', ids[0], ids[1], True, False)
        if refused.get("accepted") or "own order" not in self.js("return document.getElementById('banner').textContent"):
            raise Failure(f"a sorted list took a drag: {refused}")
        self.driver.find_element(By.CSS_SELECTOR, "#album-grid [data-column=title] button").click()
        self.driver.find_element(By.CSS_SELECTOR, "#album-grid [data-column=title] button").click()
        self.until(lambda: rows()[:len(before)] == before, "back in the library's order")
        self.focus("show-covers")
        self.key(Keys.ENTER)
        self.until(lambda: not self.js("return document.getElementById('covers').hidden"), "Covers shows the covers again")

    def resumes_after_a_disconnect(self):
        self.collect_logs()
        seen = len(self.request_headers)
        # Changes made while the stream is down come with the resumed stream (Last-Event-ID).
        self.proxy.cut()
        self.api("POST", "/albums", {"title": "While Away", "artist": "Nobody Home", "index": 0}, expect=201)
        self.until(lambda: self.names()[:1] == ["While Away - Nobody Home"], "the change made while away arrives")
        self.collect_logs()
        resumed = [headers for url, headers in self.request_headers[seen:]
                   if url.startswith(self.app_base + "/events") and any(k.lower() == "last-event-id" for k in headers)]
        if not resumed:
            raise Failure("the reconnect did not send Last-Event-ID")
        revalidated = [url for url, headers in self.request_headers[seen:]
                       if url.startswith(self.app_base + "/albums?") and any(k.lower() == "if-none-match" for k in headers)]
        if not revalidated:
            raise Failure("after the reconnect the first page was not revalidated with If-None-Match")

    def a_replaced_library_reloads(self):
        # PUT /archive replaces the library: the app gets library.replaced and loads it again.
        archive = self.api("GET", "/archive", expect=200)
        archive["albums"] = archive["albums"][:3]
        archive["states"] = []
        self.api("PUT", "/archive", archive, expect=200)
        expected = [f"{a['title']} - {a['artist']}" for a in archive["albums"]]
        self.until(lambda: self.names() == expected, "the replaced library is shown without a reload")
        self.loaded()

    CONTRAST_JS = """
        const rgb = (text) => (text.match(/[\\d.]+/g) || []).map(Number);
        const background = (element) => {
            for (let e = element; e; e = e.parentElement) {
                const [r, g, b, a = 1] = rgb(getComputedStyle(e).backgroundColor);
                if (a > 0) return [r, g, b];
            }
            return rgb(getComputedStyle(document.documentElement).backgroundColor);
        };
        return arguments[0].map((selector) => {
            const element = document.querySelector(selector);
            return element && [selector, rgb(getComputedStyle(element).color).slice(0, 3), background(element)];
        }).filter(Boolean);
    """
    CONTRAST_SELECTORS = ["h1", "#model-state", "#live", ".album .title", ".album .artist", ".details caption",
                          ".details th", ".details td", "#add", "#delete", ".placeholder .monogram", "#banner",
                          "#access", "#manage", "#transfer", "#results", ".layout [aria-pressed=true]",
                          ".grid-head button", ".grid-rows .cell.title", ".grid-rows .cell.artist",
                          "#transfer-dialog h2", "#transfer-dialog .hint", "#transfer-note", "#import-errors",
                          "#transfer-label", "#transfer-bytes", "#import-form [type=submit]",
                          "#libraries-dialog h3", "#view-sources legend", ".field-error"]

    def check_contrast(self, scheme):
        """WCAG 2 contrast of the main text against what is behind it: at least 4.5:1."""
        def luminance(rgb):
            channels = [c / 255 for c in rgb]
            channels = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
            return 0.2126 * channels[0] + 0.7152 * channels[1] + 0.0722 * channels[2]
        low = []
        measured = self.js(self.CONTRAST_JS, self.CONTRAST_SELECTORS)
        if len(measured) < 8 or any(len(colour) != 3 or len(behind) != 3 for _, colour, behind in measured):
            raise Failure(f"contrast check could not read the colours: {measured}")
        figures = []
        for selector, colour, behind in measured:
            lighter, darker = sorted([luminance(colour), luminance(behind)], reverse=True)
            ratio = (lighter + 0.05) / (darker + 0.05)
            figures.append(f"{selector} {ratio:.2f}")
            if ratio < 4.5:
                low.append(f"{selector} {ratio:.2f}:1")
        print(f"  contrast ({scheme}, text : background, at least 4.5): {'; '.join(figures)}", flush=True)
        if low:
            raise Failure(f"text below 4.5:1 contrast ({scheme}): {low}")

    def a_lower_page_limit_is_followed(self):
        # An operator lowers paging.maxLimit below the app's page size: the app's limit gets a
        # 400 naming `limit`, and the app goes on at the server's default page size.
        paging = self.api("GET", "/settings", expect=200)["paging"]
        self.api("PATCH", "/settings", {"paging": {"defaultLimit": 20, "maxLimit": 30}}, expect=200)
        try:
            self.driver.refresh()
            self.loaded()
            Select(self.driver.find_element(By.ID, "source")).select_by_value("library:big")
            self.until(lambda: self.loaded_count() in (20, 40, 60) and self.js("return document.documentElement.dataset.state") == "loaded",
                       "Big's first pages load at the server's default of 20")
            self.js("const c = document.getElementById('covers'); c.scrollLeft = c.scrollWidth")
            self.until(lambda: self.loaded_count() > 20, "scrolling still loads the next page")
        finally:
            self.api("PATCH", "/settings", {"paging": paging}, expect=200)
        Select(self.driver.find_element(By.ID, "source")).select_by_value("library:default")
        self.loaded()

    def phone_width_and_dark(self):
        self.driver.set_window_size(390, 844)
        self.until(lambda: self.js("return document.documentElement.scrollWidth <= window.innerWidth"),
                   "nothing is wider than a phone's screen")
        self.js("window.scrollTo(0, 0)")
        self.shot("app-phone.png")
        self.js("document.getElementById('show-list').click()")
        self.until(lambda: self.js("return !document.getElementById('album-grid').hidden && document.querySelector('#album-grid .grid-rows [role=row]') !== null"),
                   "the list view at phone width")
        if not self.js("return document.documentElement.scrollWidth <= window.innerWidth"):
            raise Failure("the list view is wider than a phone's screen")
        self.shot("app-phone-list.png")
        self.check_contrast("light")
        self.js("document.getElementById('show-covers').click()")
        # The dialogs at phone width: nothing wider than the screen.
        for button, dialog, name in (("transfer", "transfer-dialog", "app-phone-transfer.png"), ("manage", "libraries-dialog", "app-phone-views.png")):
            # Typed into the button itself: the dialog closed before gives the focus back to its
            # own button in its close event, which may come after a focus() of the next button.
            self.driver.find_element(By.ID, button).send_keys(Keys.ENTER)
            self.until(lambda: self.js(f"return document.getElementById('{dialog}').open"), f"{button} opens its dialog at phone width")
            width = self.js(f"const d = document.getElementById('{dialog}').getBoundingClientRect(); return [d.left, d.right, window.innerWidth]")
            if width[0] < 0 or width[1] > width[2]:
                raise Failure(f"the dialog of {button} is wider than a phone's screen: {width}")
            self.shot(name)
            ActionChains(self.driver).send_keys(Keys.ESCAPE).perform()
            self.until(lambda: not self.js(f"return document.getElementById('{dialog}').open")
                       and self.js("return document.activeElement.id") == button, "Escape closes it and gives the focus back")
        self.driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [
            {"name": "prefers-color-scheme", "value": "dark"}, {"name": "prefers-reduced-motion", "value": "reduce"}]})
        background = self.js("return getComputedStyle(document.documentElement).backgroundColor")
        if background in ("rgb(255, 255, 255)", "rgba(0, 0, 0, 0)"):
            raise Failure(f"prefers-color-scheme: dark leaves the background {background}")
        self.check_contrast("dark")
        self.shot("app-phone-dark.png")
        self.focus("transfer")
        self.key(Keys.ENTER)
        self.until(lambda: self.js("return document.getElementById('transfer-dialog').open"), "the dialog opens in dark mode")
        self.shot("app-phone-dark-transfer.png")
        ActionChains(self.driver).send_keys(Keys.ESCAPE).perform()
        self.until(lambda: self.js("return document.activeElement.id") == "transfer", "Escape closes it and gives the focus back")
        self.driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})
        self.driver.set_window_size(1280, 800)

    def a_read_key_hides_the_write_controls(self):
        # A read key (made with the admin token) in a fresh tab: the header names it and its
        # scope, Add, Delete and Undo are hidden and a line says the library is read-only here;
        # the header's key button takes another key, and a key that may write brings them back.
        reader = self.api("POST", "/keys", {"name": "family", "scopes": ["read"]}, expect=201)
        writer = self.api("POST", "/keys", {"name": "kitchen", "scopes": ["write"], "libraries": ["default"]}, expect=201)
        self.driver.switch_to.new_window("tab")
        self.driver.get(self.app_base + "/app/")
        self.js("sessionStorage.setItem('bluelibrary.token', arguments[0]); localStorage.setItem('bluelibrary.source', 'library:default')",
                reader["secret"])
        self.driver.refresh()
        self.loaded()
        access = lambda: self.js("return document.getElementById('access').textContent")
        hidden = lambda: self.js("return ['add', 'delete', 'undo', 'edit', 'move', 'manage'].map(id => document.getElementById(id).hidden)")
        self.until(lambda: access() == f"Key {reader['id']} (family): read · all libraries", "the header names the read key and its scope")
        self.until(lambda: hidden() == [True] * 6, "a read key hides Add, Delete, Undo, Edit, Move to library… and Libraries and views…")
        self.focus("covers")
        self.key(Keys.F2)
        if not self.js("return document.getElementById('edit-form').hidden"):
            raise Failure("F2 opened the edit form with a read key")
        if self.js("return document.getElementById('read-only').hidden"):
            raise Failure("nothing says the library is read-only for this key")
        if self.js("return document.getElementById('key').textContent") != "Change key":
            raise Failure("the header has no button to change the key")
        # The Delete key does nothing with it (deleting would disable the button at once).
        self.focus("covers")
        self.key(Keys.DELETE)
        if self.js("return document.getElementById('delete').disabled") or self.token_dialog_open():
            raise Failure("the Delete key tried to delete with a read key")
        self.shot("app-read-key.png")
        # Export needs only read: the dialog opens on Export CSV, without the import form.
        self.focus("transfer")
        self.key(Keys.ENTER)
        self.until(lambda: self.js("return document.getElementById('transfer-dialog').open"), "a read key opens Import / export…")
        if self.js("return [document.getElementById('import-form').hidden, document.activeElement.id]") != [True, "export-csv"]:
            raise Failure("a read key is offered the import, or the focus is not on Export CSV")
        ActionChains(self.driver).send_keys(Keys.ESCAPE).perform()
        self.until(lambda: not self.js("return document.getElementById('transfer-dialog').open")
                   and self.js("return document.activeElement.id") == "transfer", "Escape closes it and gives the focus back")
        self.focus("key")
        self.key(Keys.ENTER)
        self.until(lambda: self.js("return document.getElementById('token-current').textContent") == f"In use: {access()}.",
                   "the key prompt says what the key in use may do")
        self.enter_token(writer["secret"])
        self.until(lambda: access() == f"Key {writer['id']} (kitchen): read, write · libraries default", "the header names the new key")
        self.until(lambda: hidden() == [False] * 5 + [True], "a key that may write shows Add, Delete, Undo, Edit and Move again (Libraries and views… needs admin)")
        if not self.js("return document.getElementById('read-only').hidden"):
            raise Failure("the read-only line stays with a key that may write")
        if self.js("return sessionStorage.getItem('bluelibrary.token')") != writer["secret"]:
            raise Failure("the new key is not in sessionStorage")
        if self.js("return localStorage.getItem('bluelibrary.token')") is not None:
            raise Failure("a key was written to localStorage")
        self.driver.close()
        self.driver.switch_to.window(self.driver.window_handles[0])
        for key in (reader, writer):
            self.api("DELETE", f"/keys/{key['id']}", expect=204)

    def reads_protected_then_locked_out(self):
        # A live tab without a token; then reads get protected: the resumed stream gets 401 and
        # the app asks for the token, then goes live again with it.
        self.driver.switch_to.new_window("tab")
        self.driver.get(self.app_base + "/app/")
        self.loaded()
        if self.js("return sessionStorage.getItem('bluelibrary.token')") is not None:
            raise Failure("a fresh tab already has a token")
        self.api("PATCH", "/settings", {"access": {"protectReads": True, "attemptLimit": 2}}, expect=200)
        self.proxy.cut()
        self.enter_token(self.token)
        self.until(lambda: self.js("return document.documentElement.dataset.live") == "live", "the stream is live again with the token")
        # With protectReads a fresh tab (no token) is asked for it before anything shows.
        self.driver.close()
        self.driver.switch_to.window(self.driver.window_handles[0])
        self.driver.switch_to.new_window("tab")
        self.driver.get(self.app_base + "/app/")
        self.enter_token(self.token)
        self.loaded()
        expected = [f"{a['title']} - {a['artist']}" for a in self.api("GET", "/albums", expect=200)["items"]]
        self.until(lambda: self.names() == expected, "the protected library is shown after the token")
        # Too many wrong tokens: 429, and the app says when to try again.
        self.js("sessionStorage.removeItem('bluelibrary.token')")
        self.focus("delete")
        self.key(Keys.ENTER)

        def guess_until_locked():
            if "Try again in" in self.js("return document.getElementById('banner').textContent"):
                return True
            if self.token_dialog_open():
                field = self.driver.find_element(By.CSS_SELECTOR, "#token-form input[name=token]")
                field.clear()
                field.send_keys("still-the-wrong-token", Keys.ENTER)
            return False
        self.until(guess_until_locked, "the 429 is reported with when to retry")
        self.shot("app-locked-out.png")
        # The event stream, resumed while locked out, waits for Retry-After and says so.
        self.proxy.cut()
        self.until(lambda: "too many attempts" in self.js("return document.getElementById('live').textContent"),
                   "the stream's 429 is reported with when it retries")

    def only_this_origin_and_no_console_errors(self):
        self.collect_logs()
        foreign = [url for url in self.requests
                   if not (url.startswith(self.app_base + "/") or url.startswith("data:") or url.startswith("blob:"))]
        if foreign:
            raise Failure(f"requests to another origin: {foreign[:5]}")
        if not any(url.startswith(self.app_base + "/app/") for url in self.requests):
            raise Failure("no request was recorded at all (performance log empty?)")
        # HTTP errors the app handles (401, 404 of a cover, 422, 429) are logged by Chromium
        # as network entries, and so is the event stream cut by the proxy on purpose;
        # everything else (script errors, CSP violations, failed requests) fails.
        def handled(entry):
            message = entry["message"]
            return entry.get("source") == "network" and (
                "the server responded with a status of" in message
                or message.startswith(self.app_base + "/events") and "net::ERR_INCOMPLETE_CHUNKED_ENCODING" in message)
        errors = [e for e in self.console if e["level"] == "SEVERE" and not handled(e)]
        if errors:
            raise Failure(f"console errors: {[e['message'] for e in errors][:5]}")

    def run(self):
        steps = [self.five_albums_appear, self.the_first_page_is_asked_for_first, self.the_event_parser_handles_split_chunks, self.keyboard_selects, self.search_as_you_type,
                 self.delete_then_undo_with_the_token, self.several_at_once, self.manage_libraries,
                 self.add_with_an_error_then_at_a_position, self.a_failed_cover_is_tried_again_on_the_next_view,
                 self.edit_in_place, self.reorder_by_keyboard_and_drag_then_undo,
                 self.reload_restores_the_selection,
                 self.a_second_window_sees_changes, self.switcher_pages_and_views, self.manage_views, self.views_reorder_and_filter,
                 self.import_and_export, self.a_list_view_sorts_and_scrolls, self.a_far_jump_reads_by_offset,
                 self.list_rows_reorder_by_drag,
                 self.resumes_after_a_disconnect,
                 self.events_are_merged_one_at_a_time,
                 self.a_replaced_library_reloads, self.a_lower_page_limit_is_followed, self.phone_width_and_dark,
                 self.a_read_key_hides_the_write_controls, self.reads_protected_then_locked_out, self.only_this_origin_and_no_console_errors]
        try:
            for step in steps:
                started = time.monotonic()
                step()
                print(f"ok {step.__name__} ({time.monotonic() - started:.1f} s)", flush=True)
            return 0
        except Exception as error:  # noqa: BLE001 - every failure ends the run with its step
            print(f"FAIL {step.__name__}: {error}", flush=True)
            self.shot(f"failed-{step.__name__}.png")
            try:
                self.collect_logs()
                scripts = [e for e in self.console if e.get("source") != "network"]
                for entry in (scripts or self.console)[-10:]:
                    print(f"  console: {entry['level']} {entry['message'][:300]}", flush=True)
            except Exception:  # noqa: BLE001
                pass
            return 1
        finally:
            self.driver.quit()
            self.covers.shutdown()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--screenshots")
    parser.add_argument("--app-url", help="where the browser opens the server (default: --base), e.g. behind a proxy's path prefix")
    arguments = parser.parse_args()
    sys.exit(Run(arguments.base, arguments.token, arguments.screenshots, arguments.app_url).run())


if __name__ == "__main__":
    main()
