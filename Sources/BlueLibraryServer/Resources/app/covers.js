// The cover scroller: a listbox of albums, each an option named "Title - Artist", whose
// thumbnails load lazily (when scrolled near) and at most a few at a time. A cover that
// cannot be shown leaves a placeholder that says why.

import { seg } from './api.js';
import { libraryPrefix } from './model.js';

const PARALLEL = 4;
const THUMBNAIL = 128;

export class CoverScroller {
  /**
   * @param listbox the `role=listbox` element
   * @param api the Api (covers are fetched with the token, so a read-protected server works)
   * @param onNearEnd called when the end of what is loaded comes into view
   */
  constructor(listbox, api, onNearEnd) {
    this.listbox = listbox;
    this.api = api;
    this.options = new Map();
    this.objectURLs = new Map();
    /** Album id → the AbortController of its cover request in flight. */
    this.inflight = new Map();
    this.queue = [];
    this.running = 0;
    this.firstCoverShown = null;
    this.sentinel = document.createElement('div');
    this.sentinel.className = 'sentinel';
    this.sentinel.setAttribute('aria-hidden', 'true');
    this.visibility = new IntersectionObserver((entries) => {
      for (const entry of entries) {
        if (!entry.isIntersecting) continue;
        if (entry.target === this.sentinel) { onNearEnd(); continue; }
        this.visibility.unobserve(entry.target);
        this.enqueue(entry.target);
      }
    }, { root: listbox, rootMargin: '0px 600px' });
  }

  /** Shows `items` (in order), keeping the options (and loaded covers) that stay. */
  render(items, libraryOf) {
    const keep = new Set(items.map((item) => item.id));
    for (const [id, option] of this.options) {
      if (!keep.has(id)) {
        option.remove();
        this.options.delete(id);
        this.visibility.unobserve(option);
        // A cover request for an album no longer shown gives its slot back at once.
        this.inflight.get(id)?.abort();
        const url = this.objectURLs.get(id);
        if (url) { URL.revokeObjectURL(url); this.objectURLs.delete(id); }
      }
    }
    let before = this.listbox.firstChild;
    for (const item of items) {
      let option = this.options.get(item.id);
      if (!option) {
        option = this.makeOption(item, libraryOf(item));
        this.options.set(item.id, option);
        this.visibility.observe(option);
      } else {
        this.update(option, item);
      }
      if (option !== before) this.listbox.insertBefore(option, before);
      before = option.nextSibling;
    }
    this.listbox.appendChild(this.sentinel);
    this.visibility.unobserve(this.sentinel);
    this.visibility.observe(this.sentinel);
  }

  makeOption(item, library) {
    const option = document.createElement('div');
    option.setAttribute('role', 'option');
    option.id = `album-${item.id}`;
    option.className = 'album';
    option.dataset.id = item.id;
    option.dataset.cover = `${libraryPrefix(library)}albums/${seg(item.id)}/cover?size=${THUMBNAIL}`;
    const frame = document.createElement('div');
    frame.className = 'cover placeholder';
    frame.textContent = item.coverUrl ? 'Loading cover…' : 'No cover';
    const title = document.createElement('span');
    title.className = 'title';
    const artist = document.createElement('span');
    artist.className = 'artist';
    option.append(frame, title, artist);
    this.update(option, item);
    return option;
  }

  update(option, item) {
    option.setAttribute('aria-label', `${item.title} - ${item.artist}`);
    option.querySelector('.title').textContent = item.title;
    option.querySelector('.artist').textContent = item.artist;
    const source = item.coverUrl || '';
    if (option.dataset.source === undefined) {
      option.dataset.source = source;
    } else if (option.dataset.source !== source) {
      // The album's cover changed (edited here or elsewhere): show the new one.
      option.dataset.source = source;
      const frame = option.querySelector('.cover');
      frame.className = 'cover placeholder';
      frame.removeAttribute('title');
      frame.textContent = source ? 'Loading cover…' : 'No cover';
      this.inflight.get(item.id)?.abort();
      const url = this.objectURLs.get(item.id);
      if (url) { URL.revokeObjectURL(url); this.objectURLs.delete(item.id); }
      if (source) this.enqueue(option);
    }
  }

  /** The server has just fetched `coverUrl` (`cover.loaded`): options that gave up on it try again. */
  retry(coverUrl) {
    for (const option of this.options.values()) {
      if (option.dataset.source === coverUrl && option.querySelector('.cover.failed')) this.enqueue(option);
    }
  }

  enqueue(option) {
    if (!option.dataset.source) return;
    this.queue.push(option);
    this.pump();
  }

  pump() {
    while (this.running < PARALLEL && this.queue.length) {
      const option = this.queue.shift();
      if (!option.isConnected) continue;
      this.running += 1;
      this.load(option, 0).finally(() => { this.running -= 1; this.pump(); });
    }
  }

  async load(option, attempt) {
    const frame = option.querySelector('.cover');
    const id = option.dataset.id;
    const source = option.dataset.source;
    // Still wanted: shown, and for the cover it was started for.
    const wanted = () => option.isConnected && option.dataset.source === source;
    const controller = new AbortController();
    this.inflight.set(id, controller);
    let response;
    let bytes;
    try {
      response = await fetch(this.api.url(option.dataset.cover), {
        headers: this.api.headers({ Accept: 'image/avif,image/webp,image/*' }), signal: controller.signal,
        // The thumbnail's URL stays the same when the album's cover changes: revalidate (ETag)
        // rather than trust a cached copy, so the old bytes are never shown for a new cover.
        cache: 'no-cache',
      });
      if (response.ok) bytes = await response.blob();
    } catch {
      if (controller.signal.aborted || !wanted()) return;
      return this.fail(frame, 'Cover not loaded: the server could not be reached.');
    } finally {
      if (this.inflight.get(id) === controller) this.inflight.delete(id);
    }
    if ((response.status === 504 || response.status === 202) && attempt < 3) {
      const wait = Number(response.headers.get('Retry-After')) || 2;
      await new Promise((resolve) => setTimeout(resolve, wait * 1000));
      if (!wanted()) return;
      return this.load(option, attempt + 1);
    }
    if (!wanted()) return;
    if (!response.ok) {
      let detail = `the server answered ${response.status}`;
      try { detail = (await response.json()).detail || detail; } catch { /* not a problem document */ }
      return this.fail(frame, `Cover unavailable: ${detail}`);
    }
    const url = URL.createObjectURL(bytes);
    const image = document.createElement('img');
    image.alt = '';
    image.width = THUMBNAIL;
    image.height = THUMBNAIL;
    image.decoding = 'async';
    image.addEventListener('load', () => {
      if (this.objectURLs.get(id) !== url) return;
      frame.replaceChildren(image);
      frame.classList.remove('placeholder', 'failed');
      if (this.firstCoverShown === null) {
        this.firstCoverShown = performance.now();
        document.documentElement.dataset.firstCover = String(Math.round(this.firstCoverShown));
      }
    }, { once: true });
    image.addEventListener('error', () => {
      if (this.objectURLs.get(id) === url) this.fail(frame, 'Cover unavailable: the image could not be decoded.');
    }, { once: true });
    image.src = url;
    const previous = this.objectURLs.get(id);
    if (previous) URL.revokeObjectURL(previous);
    this.objectURLs.set(id, url);
  }

  fail(frame, reason) {
    frame.classList.add('placeholder', 'failed');
    frame.textContent = reason;
    frame.title = reason;
  }
}
