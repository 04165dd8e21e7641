// The cover scroller: a listbox of albums, each an option named "Title - Artist", virtualised
// (only the options in view and a few either side are in the DOM), whose thumbnails load
// lazily (when scrolled near) and at most a few at a time. Until a cover is
// shown (and when there is none, or it failed) the album's monogram stands in: its initials on
// a colour derived from the artist. A failure's reason is only in the tooltip and the option's
// description (screen readers); the cover is asked for again the next time it comes into view
// or the list reloads, never in a loop.

import { seg } from './api.js';
import { libraryPrefix } from './model.js';

/**
 * Thumbnails fetched at once. A browser keeps at most six connections to a host: with the
 * event stream and the selected album's large cover this leaves one for the API even while
 * every cover waits on a slow upstream.
 */
const PARALLEL = 3;
const THUMBNAIL = 128;

/** Up to two initials of `title` (the first letter or digit of its first two words). */
export function initials(title) {
  const words = String(title || '').split(/\s+/).map((word) => word.match(/[\p{L}\p{N}]/u)?.[0]).filter(Boolean);
  return (words.slice(0, 2).join('') || '?').toLocaleUpperCase();
}

/**
 * A hue (0-359) derived from `artist` (FNV-1a of its folded text): every album of an artist
 * gets the same colour. The stylesheet keeps saturation and lightness low enough (45 %, 30 %)
 * for white initials to have at least 5:1 contrast on any hue, in light and dark.
 */
export function hueOf(artist) {
  let hash = 0x811c9dc5;
  for (const char of String(artist || '').normalize('NFKD').toLocaleLowerCase()) {
    hash ^= char.codePointAt(0);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % 360;
}

/**
 * Fills `frame` (a `.cover` box) with the monogram of `item`: `state` is `loading`, `none`
 * (the album has no cover) or `failed`; `reason` goes to the tooltip and to `note` (a visually
 * hidden element that describes the option for screen readers), never on screen.
 */
export function showMonogram(frame, item, state, reason = '', note = null) {
  const monogram = document.createElement('span');
  monogram.className = 'monogram';
  monogram.setAttribute('aria-hidden', 'true');
  monogram.textContent = initials(item.title);
  frame.replaceChildren(monogram);
  frame.classList.remove('loading', 'none', 'failed');
  frame.classList.add('cover', 'placeholder', state);
  frame.dataset.state = state;
  // CSSOM (not a style attribute): allowed by the app's style-src 'self'.
  frame.style.setProperty('--hue', String(hueOf(item.artist)));
  if (reason) frame.title = reason; else frame.removeAttribute('title');
  if (note) note.textContent = reason;
}

/** Pixels from one cover to the next (the stylesheet's `.album` width and the gap). */
export const STRIDE = 148;
/** Covers rendered before and after the visible ones. */
const OVERSCAN = 6;
/** Options kept (with their loaded covers) this many places beyond the rendered ones. */
const KEEP = 120;

export class CoverScroller {
  /**
   * Virtualised like the list view: only the covers in view (and a few either side) are in the
   * DOM, absolutely placed on a strip as wide as every album would be.
   * @param listbox the `role=listbox` element
   * @param api the Api (covers are fetched with the token, so a read-protected server works)
   * @param onNeed called with the first and last places drawn when some of them are not loaded
   *   yet (or the loaded prefix ends near them)
   */
  constructor(listbox, api, onNeed) {
    this.listbox = listbox;
    this.api = api;
    this.onNeed = onNeed;
    this.list = null;
    this.selected = null;
    this.chosen = new Set();
    this.options = new Map();
    this.objectURLs = new Map();
    /** Album id → the AbortController of its cover request in flight. */
    this.inflight = new Map();
    this.queue = [];
    this.running = 0;
    this.firstCoverShown = null;
    this.frame = 0;
    this.strip = document.createElement('div');
    this.strip.className = 'strip';
    this.strip.setAttribute('aria-hidden', 'true');
    listbox.append(this.strip);
    listbox.addEventListener('scroll', () => {
      if (!this.frame) this.frame = requestAnimationFrame(() => { this.frame = 0; this.draw(); });
    }, { passive: true });
    new ResizeObserver(() => this.draw()).observe(listbox);
    this.visibility = new IntersectionObserver((entries) => {
      for (const entry of entries) {
        const option = entry.target;
        // A failed cover is watched until it leaves the view; coming back, it is tried once more.
        if (!entry.isIntersecting) {
          if (option.dataset.retry === 'after-leave') option.dataset.retry = 'on-enter';
          continue;
        }
        if (option.dataset.retry === 'after-leave') continue;
        delete option.dataset.retry;
        this.visibility.unobserve(option);
        this.enqueue(option);
      }
    }, { root: listbox, rootMargin: '0px 300px' });
  }

  /** Shows `list` (an AlbumList, or null for nothing), keeping the options (and covers) that stay. */
  render(list) {
    this.list = list;
    if (!list) for (const id of [...this.options.keys()]) this.drop(id);
    this.draw();
  }

  /** The selection to show: `selected` (the album the keys move from) and `chosen` (a Set). */
  mark(selected, chosen) {
    this.selected = selected;
    this.chosen = chosen;
    for (const option of this.listbox.querySelectorAll('[role=option]')) this.markOne(option);
    if (selected && document.getElementById(`album-${selected}`)) this.listbox.setAttribute('aria-activedescendant', `album-${selected}`);
    else this.listbox.removeAttribute('aria-activedescendant');
  }

  markOne(option) {
    option.setAttribute('aria-selected', String(this.chosen.has(option.dataset.id)));
    option.classList.toggle('active', option.dataset.id === this.selected);
  }

  /** How many places the strip has: every album once the total is known, else what is loaded (and one more while there is more). */
  count() {
    const list = this.list;
    if (!list) return 0;
    return list.next ? Math.max(list.total ?? 0, list.items.length + 1) : list.items.length;
  }

  /** Forgets the option of `id`: out of the DOM, its cover request aborted, its image released. */
  drop(id) {
    const option = this.options.get(id);
    option?.remove();
    this.options.delete(id);
    if (option) this.visibility.unobserve(option);
    // A cover request for an album no longer shown gives its slot back at once.
    this.inflight.get(id)?.abort();
    const url = this.objectURLs.get(id);
    if (url) { URL.revokeObjectURL(url); this.objectURLs.delete(id); }
  }

  /** Puts the options in view (and OVERSCAN either side) on the strip, in order. */
  draw() {
    const list = this.list;
    if (!list || this.listbox.hidden) return;
    const count = this.count();
    this.strip.style.width = `${count * STRIDE}px`;
    const left = this.listbox.scrollLeft;
    const first = Math.max(0, Math.floor(left / STRIDE) - OVERSCAN);
    const last = Math.min(count - 1, Math.ceil((left + this.listbox.clientWidth) / STRIDE) + OVERSCAN);
    const at = new Map(list.range(Math.max(0, first - KEEP), last + KEEP).map((item) => [item.id, true]));
    for (const id of [...this.options.keys()]) if (!at.has(id)) this.drop(id);
    const shown = [];
    for (let index = first; index <= last; index += 1) {
      const item = list.at(index);
      let option;
      if (!item) {
        option = Object.assign(document.createElement('div'), { className: 'album pending', textContent: '…' });
        option.setAttribute('aria-hidden', 'true');
      } else {
        option = this.options.get(item.id);
        if (!option) {
          option = this.makeOption(item, list.libraryOf(item));
          this.options.set(item.id, option);
          this.visibility.observe(option);
        } else if (option.item !== item) {
          this.update(option, item);
        }
        option.item = item;
        option.setAttribute('aria-posinset', String(index + 1));
        option.setAttribute('aria-setsize', String(list.next && list.total == null ? -1 : count));
        this.markOne(option);
      }
      option.style.left = `${index * STRIDE}px`;
      shown.push(option);
    }
    const keep = new Set(shown);
    for (const child of [...this.listbox.children]) if (child !== this.strip && !keep.has(child)) child.remove();
    let before = this.strip.nextSibling;
    for (const option of shown) {
      if (option !== before) this.listbox.insertBefore(option, before);
      before = option.nextSibling;
    }
    this.mark(this.selected, this.chosen);
    // Covers in view that are not loaded (or the prefix's end near): their page, asked for after
    // this task (a draw from a page's own change event comes while that page still counts as loading).
    if (last >= list.items.length - 5 && list.next) setTimeout(() => this.onNeed(first, last));
  }

  /** Back to the first cover at once (smoothly, the covers passed would be drawn, and their pages asked for). */
  home() { this.listbox.scrollTo({ left: 0, behavior: 'instant' }); }

  /** Scrolls so the cover at `index` is in view (the least that does it), then draws. */
  reveal(index, smooth) {
    if (index < 0 || this.listbox.hidden) return;
    const left = index * STRIDE;
    const width = this.listbox.clientWidth;
    const now = this.listbox.scrollLeft;
    let to = now;
    if (left < now) to = left;
    else if (left + STRIDE > now + width) to = left + STRIDE - width;
    if (to === now) return;
    // Far away: at once (what is in between is never drawn); near: smoothly unless reduced motion.
    this.listbox.scrollTo({ left: to, behavior: smooth && Math.abs(to - now) < width ? 'smooth' : 'instant' });
    this.draw();
  }

  makeOption(item, library) {
    const option = document.createElement('div');
    option.setAttribute('role', 'option');
    option.id = `album-${item.id}`;
    option.className = 'album';
    // Reordering by drag and drop (main.js refuses the drag where albums cannot be moved).
    option.draggable = true;
    option.dataset.id = item.id;
    option.dataset.cover = `${libraryPrefix(library)}albums/${seg(item.id)}/cover?size=${THUMBNAIL}`;
    const frame = document.createElement('div');
    const title = document.createElement('span');
    title.className = 'title';
    const artist = document.createElement('span');
    artist.className = 'artist';
    // What the monogram stands for (no cover, or why it failed), for screen readers only.
    const note = document.createElement('span');
    note.className = 'visually-hidden';
    note.id = `cover-note-${item.id}`;
    option.setAttribute('aria-describedby', note.id);
    option.append(frame, title, artist, note);
    showMonogram(frame, item, item.coverUrl ? 'loading' : 'none', item.coverUrl ? '' : 'No cover', note);
    this.update(option, item);
    return option;
  }

  update(option, item) {
    option.setAttribute('aria-label', `${item.title} - ${item.artist}`);
    option.querySelector('.title').textContent = item.title;
    option.querySelector('.artist').textContent = item.artist;
    const source = item.coverUrl || '';
    const frame = option.querySelector('.cover');
    if (option.dataset.source === undefined) {
      option.dataset.source = source;
    } else if (option.dataset.source !== source) {
      // The album's cover changed (edited here or elsewhere): show the new one.
      option.dataset.source = source;
      showMonogram(frame, item, source ? 'loading' : 'none', source ? '' : 'No cover', this.note(option));
      this.inflight.get(item.id)?.abort();
      const url = this.objectURLs.get(item.id);
      if (url) { URL.revokeObjectURL(url); this.objectURLs.delete(item.id); }
      delete option.dataset.retry;
      if (source) this.enqueue(option);
    } else if (frame.dataset.state !== 'loaded') {
      // A new title or artist: a new monogram (same state, same reason).
      showMonogram(frame, item, frame.dataset.state, frame.title, this.note(option));
    }
  }

  note(option) { return option.querySelector('.visually-hidden'); }

  /**
   * The list reloaded: every cover that failed is asked for again once, when it is (or next
   * comes) into view. Observing again reports at once whether it is in view.
   */
  retryFailed() {
    for (const option of this.options.values()) {
      if (option.querySelector('.cover').dataset.state !== 'failed') continue;
      option.dataset.retry = 'on-enter';
      this.visibility.unobserve(option);
      this.visibility.observe(option);
    }
  }

  /** The server has just fetched `coverUrl` (`cover.loaded`): options that gave up on it try again. */
  retry(coverUrl) {
    for (const option of this.options.values()) {
      if (option.dataset.source === coverUrl && option.querySelector('.cover.failed')) {
        delete option.dataset.retry;
        this.visibility.unobserve(option);
        this.enqueue(option);
      }
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
      // Scrolled out of the DOM meanwhile: loaded when it comes back into view.
      if (!option.isConnected) { if (this.options.get(option.dataset.id) === option) this.visibility.observe(option); continue; }
      this.running += 1;
      this.load(option, 0).finally(() => { this.running -= 1; this.pump(); });
    }
  }

  async load(option, attempt) {
    const frame = option.querySelector('.cover');
    const id = option.dataset.id;
    const source = option.dataset.source;
    // Still wanted: shown, and for the cover it was started for.
    const wanted = () => this.options.get(id) === option && option.dataset.source === source;
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
      return this.fail(option, 'Cover not loaded: the server could not be reached.');
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
      return this.fail(option, `Cover unavailable: ${detail}`);
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
      frame.className = 'cover';
      frame.dataset.state = 'loaded';
      frame.removeAttribute('title');
      this.note(option).textContent = '';
      if (this.firstCoverShown === null) {
        this.firstCoverShown = performance.now();
        document.documentElement.dataset.firstCover = String(Math.round(this.firstCoverShown));
      }
    }, { once: true });
    image.addEventListener('error', () => {
      if (this.objectURLs.get(id) === url) this.fail(option, 'Cover unavailable: the image could not be decoded.');
    }, { once: true });
    image.src = url;
    const previous = this.objectURLs.get(id);
    if (previous) URL.revokeObjectURL(previous);
    this.objectURLs.set(id, url);
  }

  /** The monogram with the reason in its tooltip and description; tried again on the next view. */
  fail(option, reason) {
    const frame = option.querySelector('.cover');
    const item = { title: option.querySelector('.title').textContent, artist: option.querySelector('.artist').textContent };
    showMonogram(frame, item, 'failed', reason, this.note(option));
    option.dataset.retry = 'after-leave';
    this.visibility.unobserve(option);
    this.visibility.observe(option);
  }
}

/**
 * One cover shown large (the selected album's, beside its details): `path` is the album's
 * cover route. The monogram stands in while it loads, when there is none and when it fails
 * (the reason in the tooltip and in the frame's label). Resolves when done; a later call
 * for the same frame wins (an earlier answer is dropped).
 */
export async function showCover(api, frame, path, item, size = 256) {
  const turn = (frame.turn = (frame.turn || 0) + 1);
  // The previous album's cover is no longer wanted: its connection is given back at once.
  frame.request?.abort();
  const controller = new AbortController();
  frame.request = controller;
  frame.setAttribute('role', 'img');
  const label = (text) => frame.setAttribute('aria-label', `Cover of ${item.title}${text ? `: ${text}` : ''}`);
  if (frame.objectURL) { URL.revokeObjectURL(frame.objectURL); frame.objectURL = null; }
  if (!item.coverUrl) { showMonogram(frame, item, 'none', 'No cover'); label('no cover'); return; }
  showMonogram(frame, item, 'loading');
  label('loading');
  let reason;
  try {
    const response = await fetch(api.url(`${path}?size=${size}`), {
      headers: api.headers({ Accept: 'image/avif,image/webp,image/*' }), cache: 'no-cache', signal: controller.signal,
    });
    if (turn !== frame.turn) return;
    if (response.ok) {
      const url = URL.createObjectURL(await response.blob());
      const image = new Image(size, size);
      image.alt = '';
      image.src = url;
      await image.decode();
      if (turn !== frame.turn) { URL.revokeObjectURL(url); return; }
      frame.objectURL = url;
      frame.replaceChildren(image);
      frame.classList.remove('placeholder', 'loading');
      frame.dataset.state = 'loaded';
      frame.removeAttribute('title');
      label('');
      return;
    }
    let detail = `the server answered ${response.status}`;
    try { detail = (await response.json()).detail || detail; } catch { /* not a problem document */ }
    reason = `Cover unavailable: ${detail}`;
  } catch {
    if (turn !== frame.turn) return;
    reason = 'Cover not loaded: the server could not be reached or the image could not be decoded.';
  }
  if (turn !== frame.turn) return;
  frame.request = null;
  showMonogram(frame, item, 'failed', reason);
  label(reason);
}
