// The request model, in JavaScript: one paged list of albums (a library or a view) with the
// states `loading`, `loaded`, `outdated` and `failed`, cursor paging, If-None-Match
// revalidation, and a live merge of a library's events into the loaded prefix. Far beyond the
// prefix (a scroll bar dragged there), one run of albums is read by `offset` (the island), and
// walked on from there by its own cursor.

import { seg } from './api.js';

/** Where a library's album routes are (`default` has them unprefixed). */
export const libraryPrefix = (library) => (library === 'default' ? '' : `libraries/${seg(library)}/`);

/** What the app shows: a library, or a view over several. */
export class Source {
  constructor(kind, id, libraries = [id]) {
    this.kind = kind;
    this.id = id;
    this.libraries = libraries;
  }

  static parse(text) {
    const [kind, id] = (text || '').split(':');
    return kind === 'view' && id ? new Source('view', id, []) : new Source('library', id || 'default');
  }

  get key() { return `${this.kind}:${this.id}`; }
  get isView() { return this.kind === 'view'; }
  get listPath() { return this.isView ? `views/${seg(this.id)}/albums` : `${libraryPrefix(this.id)}albums`; }
  get eventsPath() {
    if (!this.isView) return `${libraryPrefix(this.id)}events`;
    return `events?${this.libraries.map((lib) => `library=${seg(lib)}`).join('&')}`;
  }
}

export class AlbumList extends EventTarget {
  constructor(api, source, pageSize = 50) {
    super();
    this.api = api;
    this.source = source;
    this.pageSize = pageSize;
    this.items = [];
    this.next = null;
    this.version = -1;
    this.firstETag = null;
    this.state = 'loading';
    this.reason = '';
    this.busy = null;
    this.generation = 0;
    /** Set when the server refused our `limit`: pages are then asked for at its default. */
    this.serverLimit = false;
    /** The search (`q`): '' for the whole list. */
    this.query = '';
    /** The order (`sort`: `title`, `-year`, ...): '' for the library's (or, searching, by relevance). */
    this.sort = '';
    /** How many albums the query matches (`count=true` on the first page), or null. */
    this.total = null;
    /**
     * Albums read by `offset` far beyond the loaded prefix: `{start, items, next, version}`
     * (`next` its cursor on, `version` the library version its first read saw), or null. One at
     * a time: a jump elsewhere replaces it.
     */
    this.island = null;
    /** The island's request in flight: `{controller, kind, from}` (`jump`, `after` or `before`; its offset), or null. */
    this.islandRequest = null;
  }

  setState(state, reason = '') {
    this.state = state;
    this.reason = reason;
    this.dispatchEvent(new Event('change'));
  }

  /** A page's URL: from `cursor`, or from `offset` (never both), or the first page with its count. */
  url(cursor, limit = this.pageSize, offset = null) {
    const parameters = [];
    if (!this.serverLimit) parameters.push(`limit=${limit}`);
    if (this.query) parameters.push(`q=${seg(this.query)}`);
    if (this.sort) parameters.push(`sort=${seg(this.sort)}`);
    if (cursor) parameters.push(`cursor=${seg(cursor)}`);
    else if (offset !== null) parameters.push(`offset=${offset}`);
    else parameters.push('count=true');
    return parameters.length ? `${this.source.listPath}?${parameters.join('&')}` : this.source.listPath;
  }

  /**
   * GETs one page. A server whose `paging.maxLimit` is below the limit asked for answers 400
   * naming `limit`: the page is then asked for again (and from then on) at the server's default.
   */
  async page(cursor, limit, options, offset = null) {
    try {
      return await this.api.get(this.url(cursor, limit, offset), options);
    } catch (error) {
      if (this.serverLimit || error.status !== 400 || !error.errors.some((e) => e.field === 'limit')) throw error;
      this.serverLimit = true;
      return this.api.get(this.url(cursor, limit, offset), options);
    }
  }

  /** The album at `index` in the list, if loaded (in the prefix or the island), else undefined. */
  at(index) {
    if (index < this.items.length) return this.items[index];
    const island = this.island;
    return island && index >= island.start ? island.items[index - island.start] : undefined;
  }

  /** Replaces the album at `index` (loaded) with `item`. */
  set(index, item) {
    if (index < this.items.length) this.items[index] = item;
    else if (this.island) this.island.items[index - this.island.start] = item;
  }

  /** Every album loaded, in order: the prefix, then the island. */
  loadedItems() { return this.island ? [...this.items, ...this.island.items] : this.items; }

  /** The albums loaded from `from` to `to` (indexes, either order), in order. */
  range(from, to) {
    const out = [];
    for (let index = Math.min(from, to); index <= Math.max(from, to); index += 1) {
      const item = this.at(index);
      if (item) out.push(item);
    }
    return out;
  }

  /** The loaded album nearest to `index` on the way back to `from` (where a key press started). */
  nearest(index, from) {
    const step = index > from ? -1 : 1;
    for (let at = index; at !== from; at += step) if (this.at(at)) return this.at(at);
    return this.at(from);
  }

  /** The last index that may hold an album: every album once the total is known, else what is loaded. */
  get lastIndex() {
    if (!this.next) return this.items.length - 1;
    return Math.max(this.total ?? 0, this.items.length, this.island ? this.island.start + this.island.items.length : 0) - 1;
  }

  /**
   * The rows `first` to `last` are in view: loads what of them is missing. Just past the
   * prefix, its cursor walks on; far beyond it, one page is read by `offset` around them (the
   * island), then walked on by the island's cursor as the view moves down, or read by offset
   * before it as the view moves up. 500 at a time; a jump elsewhere replaces the island.
   */
  need(first, last, size = 500) {
    // A failed read is not asked for again on every render: the banner's Try again reloads.
    if (!this.next || last < this.items.length || this.state === 'loading' || this.state === 'failed') return;
    if (first <= this.items.length + size / 5 || this.total == null) { this.more(size); return; }
    const island = this.island;
    const end = island ? island.start + island.items.length : 0;
    if (island && first >= island.start && last < end) return;
    const request = this.islandRequest;
    if (island && first >= island.start && first <= end + size / 5) {
      if (island.next && request?.kind !== 'after') this.readIsland('after', island.next, size);
    } else if (island && last < end && last >= island.start - size / 5) {
      const from = Math.max(this.items.length, island.start - size);
      if (from < island.start && request?.kind !== 'before') this.readIsland('before', null, island.start - from, from);
    } else if (!request || request.kind !== 'jump' || first < request.from || last >= request.from + size) {
      // Around the rows in view: a few before them, the rest after.
      this.readIsland('jump', null, size, Math.max(this.items.length, first - size / 10));
    }
  }

  /** One island read: `jump` (a new island at `offset`), `after` (its cursor on) or `before` (by offset). */
  async readIsland(kind, cursor, limit, offset = null) {
    this.islandRequest?.controller.abort();
    const controller = new AbortController();
    const request = (this.islandRequest = { controller, kind, from: offset });
    const generation = this.generation;
    const island = this.island;
    try {
      const page = await this.page(cursor, limit, { signal: controller.signal }, cursor ? null : offset);
      if (generation !== this.generation || this.island !== island || this.islandRequest !== request) return;
      const items = page.data.items;
      if (kind === 'jump') {
        this.island = { start: offset, items, next: page.data.next, version: page.data.version };
      } else if (kind === 'after') {
        const known = new Set(island.items.map((item) => item.id));
        island.items.push(...items.filter((item) => !known.has(item.id)));
        island.next = page.data.next;
      } else if (offset + items.length < island.start) {
        // A server whose page limit is lower answered fewer: these rows do not reach the island's
        // and become the island instead.
        this.island = { start: offset, items, next: page.data.next, version: page.data.version };
      } else {
        const known = new Set(island.items.map((item) => item.id));
        const before = items.slice(0, island.start - offset).filter((item) => !known.has(item.id));
        island.items.unshift(...before);
        island.start -= before.length;
      }
      this.joinIsland();
      this.dispatchEvent(new Event('change'));
    } catch (error) {
      if (error.name === 'AbortError' || generation !== this.generation) return;
      // 410: the island's walk is too old; it is read again by offset when next in view.
      if (error.status === 410) { this.island = null; this.dispatchEvent(new Event('change')); return; }
      this.setState('failed', error.message);
    } finally {
      if (this.islandRequest === request) this.islandRequest = null;
    }
  }

  /** The prefix reached the island: they become one prefix, walked on by the island's cursor. */
  joinIsland() {
    const island = this.island;
    if (!island) return;
    if (!this.next) { this.island = null; return; }
    if (this.items.length < island.start) return;
    const known = new Set(this.items.map((item) => item.id));
    this.items.push(...island.items.slice(this.items.length - island.start).filter((item) => !known.has(item.id)));
    this.next = island.next;
    this.island = null;
  }

  /**
   * A change beyond the prefix that the island cannot place (it may have moved its albums by a
   * place): the island is forgotten, and one change event (for a burst of them, an import)
   * shows the list again a moment later, which reads it again if in view.
   */
  staleIsland() {
    if (!this.island) return;
    this.dropIsland();
    this.staleTimer ??= setTimeout(() => { this.staleTimer = null; this.dispatchEvent(new Event('change')); }, 200);
  }

  /**
   * Runs `change` (of an event of library version `version`) on the prefix alone when the
   * island was read at or after that version: the island shows that change already, so its
   * place and albums must not move for it. (A view's pages have no one library's version.)
   */
  beforeIsland(version, change) {
    const island = this.island;
    if (!island || this.source.isView || typeof version !== 'number' || version > island.version) return change();
    this.island = null;
    try { return change(); } finally { this.island = island; }
  }

  /** Forgets the island (a change it cannot place); it is read again when next in view. */
  dropIsland() {
    this.islandRequest?.controller.abort();
    this.islandRequest = null;
    this.island = null;
  }

  /** The library an item belongs to. */
  libraryOf(item) { return item.library || this.source.id; }

  /** Loads the first page afresh. */
  async load() {
    const generation = ++this.generation;
    // A first page still on its way (the search of the key before) is no longer wanted.
    this.controller?.abort();
    const controller = (this.controller = new AbortController());
    this.setState('loading');
    try {
      const page = await this.page(null, undefined, { signal: controller.signal });
      if (generation !== this.generation) return;
      this.items = page.data.items;
      this.next = page.data.next;
      this.dropIsland();
      this.total = typeof page.data.total === 'number' ? page.data.total : null;
      this.version = page.data.version;
      this.firstETag = page.etag;
      this.setState('loaded');
    } catch (error) {
      if (generation === this.generation) this.setState('failed', error.message);
    }
  }

  /** Loads the next page, if there is one and no load is running. */
  more(limit = this.pageSize) {
    if (!this.next || this.busy || this.state === 'loading') return this.busy;
    const generation = this.generation;
    this.setState(this.state === 'outdated' ? 'outdated' : 'loading');
    this.busy = this.page(this.next, limit).then((page) => {
      if (generation !== this.generation) return;
      const known = new Set(this.items.map((item) => item.id));
      this.items.push(...page.data.items.filter((item) => !known.has(item.id)));
      this.next = page.data.next;
      this.joinIsland();
      this.setState(this.state === 'outdated' ? 'outdated' : 'loaded');
    }).catch((error) => {
      if (generation !== this.generation) return;
      // 410: the walk is too old to continue; start again.
      if (error.status === 410) return this.load();
      this.setState('failed', error.message);
    }).finally(() => { this.busy = null; });
    return this.busy;
  }

  /** Asks whether the first page changed (If-None-Match): 304 keeps everything. */
  async revalidate() {
    if (!this.firstETag) return this.load();
    try {
      const page = await this.page(null, undefined, { etag: this.firstETag });
      if (page.status === 304) {
        this.setState('loaded');
        return false;
      }
    } catch (error) {
      this.setState('failed', error.message);
      return false;
    }
    await this.load();
    return true;
  }

  markOutdated(reason) { this.setState('outdated', reason); }

  /** Searches for `query` ('' for the whole list) from the first page. */
  search(query) {
    this.query = query;
    return this.load();
  }

  /** Sorts by `sort` ('' for the library's order) from the first page. */
  sortBy(sort) {
    this.sort = sort;
    return this.load();
  }

  /** Whether the list is in the library's own order (where positions, adds and moves apply). */
  get inLibraryOrder() { return !this.source.isView && !this.query && !this.sort; }

  /** The index of album `id` in the list (the prefix or the island), or -1 when not loaded. */
  indexOf(id) {
    const at = this.items.findIndex((item) => item.id === id);
    if (at >= 0 || !this.island) return at;
    const inIsland = this.island.items.findIndex((item) => item.id === id);
    return inIsland < 0 ? -1 : this.island.start + inIsland;
  }

  /** Takes album `id` out (the island's place moves up with the prefix); its index, or -1. */
  remove(id) {
    const island = this.island;
    const at = this.items.findIndex((item) => item.id === id);
    if (at >= 0) {
      this.items.splice(at, 1);
      if (island) island.start -= 1;
      return at;
    }
    const inIsland = island ? island.items.findIndex((item) => item.id === id) : -1;
    if (inIsland < 0) return -1;
    island.items.splice(inIsland, 1);
    return island.start + inIsland;
  }

  /**
   * Puts `item` at `index` when that index is inside what is loaded (or at its end when all is
   * loaded). An album that was or lands between the prefix and the island moves the island's
   * albums by a place it cannot know: the island is then forgotten.
   */
  place(item, index) {
    const known = this.indexOf(item.id) >= 0;
    this.remove(item.id);
    const island = this.island;
    if (index < this.items.length || (index === this.items.length && this.next === null)) {
      this.items.splice(index, 0, item);
      if (island) {
        if (known) island.start += 1; else this.dropIsland();
      }
    } else if (island && known && index >= island.start && index <= island.start + island.items.length) {
      island.items.splice(index - island.start, 0, item);
    } else if (island) {
      this.dropIsland();
    }
  }

  /**
   * A deleted album (event `data`) taken out; when it is in neither the prefix nor the island,
   * it may have been between them: the island, one place off, is forgotten. True when the
   * items changed.
   */
  removeOrForget(data) {
    if (this.beforeIsland(data.version, () => this.remove(data.id)) >= 0) return true;
    this.beforeIsland(data.version, () => this.staleIsland());
    return false;
  }

  /**
   * Merges one event of this library (`type`, parsed `data`); true when the items changed.
   * A view's lists, search results and sorted lists are not merged: any album change outdates
   * them (the banner offers a reload), but for a deletion, which they just lose.
   * Events must be merged one at a time, in order (EventStream queues them): an album's GET
   * then cannot be answered after a later event of the same album was merged.
   */
  async merge(type, data) {
    if (type === 'library.replaced' || type === 'library.outdated') {
      await this.load();
      return true;
    }
    if (!type.startsWith('album.')) return false;
    if (!this.inLibraryOrder) {
      if ((this.query || this.sort) && type === 'album.deleted') return this.removeOrForget(data);
      this.markOutdated('The library changed - reload');
      return false;
    }
    if (typeof data.version === 'number' && data.version <= this.version) return false;
    if (typeof data.version === 'number') this.version = data.version;
    const prefix = libraryPrefix(this.source.id);
    if (type === 'album.deleted') return this.removeOrForget(data);
    const index = type === 'album.moved' ? data.to : data.index;
    const within = this.beforeIsland(data.version, () => index < this.items.length || this.next === null || this.indexOf(data.id) >= 0);
    if (!within) { this.beforeIsland(data.version, () => this.staleIsland()); return false; }
    const generation = this.generation;
    try {
      const answer = await this.api.get(`${prefix}albums/${seg(data.id)}`);
      // Reloaded meanwhile: the fresh page already has this change (or a later one).
      if (generation !== this.generation) return false;
      this.beforeIsland(data.version, () => this.place(answer.data, answer.data.index));
    } catch (error) {
      if (generation !== this.generation) return false;
      if (error.status === 404) { this.beforeIsland(data.version, () => this.remove(data.id)); return true; }
      this.markOutdated('The library changed - reload');
      return false;
    }
    return true;
  }
}
