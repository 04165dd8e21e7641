// The request model, in JavaScript: one paged list of albums (a library or a view) with the
// states `loading`, `loaded`, `outdated` and `failed`, cursor paging, If-None-Match
// revalidation, and a live merge of a library's events into the loaded prefix.

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
  }

  setState(state, reason = '') {
    this.state = state;
    this.reason = reason;
    this.dispatchEvent(new Event('change'));
  }

  url(cursor, limit = this.pageSize) {
    const parameters = [];
    if (!this.serverLimit) parameters.push(`limit=${limit}`);
    if (this.query) parameters.push(`q=${seg(this.query)}`);
    if (this.sort) parameters.push(`sort=${seg(this.sort)}`);
    if (cursor) parameters.push(`cursor=${seg(cursor)}`);
    else parameters.push('count=true');
    return parameters.length ? `${this.source.listPath}?${parameters.join('&')}` : this.source.listPath;
  }

  /**
   * GETs one page. A server whose `paging.maxLimit` is below the limit asked for answers 400
   * naming `limit`: the page is then asked for again (and from then on) at the server's default.
   */
  async page(cursor, limit, options) {
    try {
      return await this.api.get(this.url(cursor, limit), options);
    } catch (error) {
      if (this.serverLimit || error.status !== 400 || !error.errors.some((e) => e.field === 'limit')) throw error;
      this.serverLimit = true;
      return this.api.get(this.url(cursor, limit), options);
    }
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

  indexOf(id) { return this.items.findIndex((item) => item.id === id); }

  remove(id) {
    const at = this.indexOf(id);
    if (at >= 0) this.items.splice(at, 1);
    return at;
  }

  /** Puts `item` at `index` when that index is inside what is loaded (or at its end when all is loaded). */
  place(item, index) {
    this.remove(item.id);
    if (index < this.items.length || (index === this.items.length && this.next === null)) {
      this.items.splice(index, 0, item);
    }
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
      if ((this.query || this.sort) && type === 'album.deleted') return this.remove(data.id) >= 0;
      this.markOutdated('The library changed - reload');
      return false;
    }
    if (typeof data.version === 'number' && data.version <= this.version) return false;
    if (typeof data.version === 'number') this.version = data.version;
    const prefix = libraryPrefix(this.source.id);
    if (type === 'album.deleted') return this.remove(data.id) >= 0;
    const index = type === 'album.moved' ? data.to : data.index;
    const within = index < this.items.length || this.next === null || this.indexOf(data.id) >= 0;
    if (!within) return false;
    const generation = this.generation;
    try {
      const answer = await this.api.get(`${prefix}albums/${seg(data.id)}`);
      // Reloaded meanwhile: the fresh page already has this change (or a later one).
      if (generation !== this.generation) return false;
      this.place(answer.data, answer.data.index);
    } catch (error) {
      if (generation !== this.generation) return false;
      if (error.status === 404) { this.remove(data.id); return true; }
      this.markOutdated('The library changed - reload');
      return false;
    }
    return true;
  }
}
