// BlueLibrary web app: the tutorial's screen (covers, the current album's table, a toolbar
// with Delete, Undo and Add) on the request model, live through /events. The header says
// which key is in use and what it may do; the changes it may not make are hidden.

import { Access } from './access.js';
import { Problem, seg } from './api.js';
import { api, connect, first } from './first.js';
import { AlbumList, Source, libraryPrefix } from './model.js';
import { EventStream } from './events.js';
import { CoverScroller, showCover } from './covers.js';
import { AlbumTable } from './listview.js';
import { LibraryManager } from './libraries.js';
import { Transfer } from './transfer.js';
import { albumBody, albumPatch, clearErrors, fillAlbum, showErrors } from './form.js';
import { announce, clearBanner, report } from './messages.js';
import { askToken } from './token.js';

const $ = (id) => document.getElementById(id);
const ui = {
  source: $('source'), state: $('model-state'), live: $('live'), covers: $('covers'),
  details: $('details'), remove: $('delete'), undo: $('undo'), add: $('add'),
  addDialog: $('add-dialog'), addForm: $('add-form'), search: $('search'),
  access: $('access'), key: $('key'), readOnly: $('read-only'),
  edit: $('edit'), editForm: $('edit-form'), editNote: $('edit-note'), detailCover: $('detail-cover'),
  grid: $('album-grid'), showCovers: $('show-covers'), showList: $('show-list'),
  results: $('results'), manage: $('manage'), move: $('move'), moveDialog: $('move-dialog'), moveForm: $('move-form'),
};
const LAYOUT_KEY = 'bluelibrary.layout';
const reducedMotion = matchMedia('(prefers-reduced-motion: reduce)');

/** This browser's name for `PUT /state?client=` (kept in localStorage). */
function clientId() {
  let id = localStorage.getItem('bluelibrary.client');
  if (!id) {
    const bytes = crypto.getRandomValues(new Uint8Array(8));
    id = `web-${Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')}`;
    localStorage.setItem('bluelibrary.client', id);
  }
  return id;
}

const app = {
  /** The API client (first.js made it, to ask for the first page before this module ran). */
  api,
  /** What the key in this tab may do (GET /keys/self). */
  access: new Access(),
  client: clientId(),
  list: null,
  stream: null,
  scroller: null,
  /** The list view (a virtualised table). */
  table: null,
  /** `covers` or `list`, remembered per browser. */
  layout: localStorage.getItem(LAYOUT_KEY) === 'list' ? 'list' : 'covers',
  /** The order asked of the server ('' for the library's own). */
  sort: '',
  selected: null,
  /** The albums selected together (ids; the selected one among them): Shift and Ctrl/Cmd. */
  chosen: new Set(),
  /** Where a Shift range starts. */
  anchor: null,
  undoLibrary: null,
  undoETag: null,
  saveTimer: null,
  searchTimer: null,
  tableRequest: 0,
  /** True while a move (Alt+arrow) is on its way: one at a time. */
  moving: false,
  /** The album being edited: `{id, library, album, etag}` (the ETag its fields were read at), or null. */
  editing: null,
  /** The index Ctrl+Home or Ctrl+End went to while its album was not loaded yet, or null. */
  goingTo: null,
  /**
   * The selected album when it was selected beyond the loaded prefix (read by offset):
   * `{item, index}`. It stays selected when a jump elsewhere replaces the rows around it.
   */
  farSelected: null,
  /** Counts open() calls (and switches): a superseded one stops where it is. */
  opening: 0,
};

// ---- Sources (libraries and views) ---------------------------------------------------------

async function loadSources() {
  const [libraries, views] = await Promise.all([
    app.api.get('libraries').then((r) => r.data.libraries).catch(() => [{ id: 'default', name: 'default' }]),
    app.api.get('views').then((r) => r.data.views).catch(() => []),
  ]);
  const group = (label, entries) => {
    const element = document.createElement('optgroup');
    element.label = label;
    for (const entry of entries) element.append(entry);
    return element;
  };
  const option = (value, text) => Object.assign(document.createElement('option'), { value, textContent: text });
  ui.source.replaceChildren(
    group('Libraries', libraries.map((lib) => option(`library:${lib.id}`, lib.name || lib.id))),
    ...(views.length ? [group('Views', views.map((view) => option(`view:${view.id}`, view.name || view.id)))] : []),
  );
  return { libraries, views };
}

function chosenSource(views) {
  const wanted = Source.parse(localStorage.getItem('bluelibrary.source'));
  const known = [...ui.source.options].some((o) => o.value === wanted.key);
  const source = known ? wanted : new Source('library', 'default');
  if (source.isView) source.libraries = views.find((view) => view.id === source.id)?.sources || [];
  ui.source.value = source.key;
  return source;
}

/**
 * The Libraries and views dialog changed something: the switcher is read again; the library
 * shown, if it was deleted, is replaced by default; the view shown, if it changed, is read again.
 */
async function librariesChanged(deleted, view) {
  const generation = ++app.opening;
  const shown = app.list?.source;
  if (deleted && shown && !shown.isView && shown.id === deleted) localStorage.setItem('bluelibrary.source', 'library:default');
  const { views } = await loadSources();
  if (generation !== app.opening) return;
  const source = chosenSource(views);
  if (!shown || source.key !== shown.key || (shown.isView && shown.id === view)) open(source);
}

// ---- The list and the screen ---------------------------------------------------------------

/**
 * Shows `source` with its own event stream. Each call supersedes the one before: a call whose
 * awaits end after a later call started does nothing more (it neither selects nor starts a stream).
 */
async function open(source, early = null) {
  const generation = ++app.opening;
  const current = () => generation === app.opening;
  app.stream?.stop();
  app.stream = null;
  // No stream for this source yet: the indicator says so until its own stream is live.
  ui.live.textContent = 'connecting…';
  document.documentElement.dataset.live = 'connecting';
  // The list whose first page start() asked for before anything else (it may be on screen already).
  let list = early?.list;
  if (list) {
    list.source.libraries = source.libraries;
  } else {
    app.selected = null;
    clearBanner();
    list = newList(source);
    app.scroller.render(null);
    app.scroller.home();
  }
  await (early?.loading || list.load());
  if (!current()) return;
  await restoreSelection();
  if (!current()) return;
  render();
  const stream = new EventStream(app.api, source.eventsPath, (type, data) => (app.list === list ? onEvent(type, data) : undefined), (status, detail) => {
    if (app.stream !== stream) return;
    ui.live.textContent = status === 'live' ? 'live' : detail;
    document.documentElement.dataset.live = status;
    // Back after a pause: what changed meanwhile came with Last-Event-ID; the first page is
    // revalidated too (304 when nothing did).
    if (status === 'live' && app.wasDisconnected) list.revalidate();
    app.wasDisconnected = status !== 'live';
  });
  app.stream = stream;
  // Events after the version the list was read at: nothing falls between the page and the stream.
  if (!source.isView && list.version >= 0) stream.lastEventId = String(list.version);
  stream.start();
  refreshUndo();
}

/**
 * An AlbumList of `source` with the search box's query and the order chosen, or `list` (the
 * one first.js started): the list shown, rendered on each change.
 */
function newList(source, list = null) {
  if (!list) {
    list = new AlbumList(app.api, source);
    list.query = searchQuery();
    list.sort = app.sort;
  }
  app.list = list;
  app.goingTo = null;
  app.farSelected = null;
  list.addEventListener('change', () => { if (app.list === list) render(); });
  return list;
}

const STATE_TEXT = { loading: 'loading…', loaded: 'loaded', outdated: 'outdated', failed: 'failed' };

function render() {
  const list = app.list;
  document.documentElement.dataset.state = list.state;
  // For scripts/bench-app: milliseconds from navigation to the first albums on screen.
  if (list.items.length && !document.documentElement.dataset.firstList) {
    document.documentElement.dataset.firstList = String(Math.round(performance.now()));
  }
  ui.state.textContent = `${STATE_TEXT[list.state]}${list.items.length ? ` · ${list.items.length}${list.next ? '+' : ''} albums` : ''}`;
  ui.covers.setAttribute('aria-busy', String(list.state === 'loading'));
  app.scroller.render(list);
  app.table.show(list, app.selected, list.sort);
  if (list.state === 'outdated') {
    announce(list.reason || 'The library changed - reload', { action: { label: 'Reload', run: () => reload() } });
  } else if (list.state === 'failed') {
    announce(`The albums could not be loaded: ${list.reason}`, { kind: 'error', action: { label: 'Try again', run: () => reload() } });
  }
  if (app.selected && list.indexOf(app.selected) < 0 && app.farSelected?.item.id !== app.selected) app.selected = null;
  if (!app.selected && list.items.length && list.state !== 'loading') select(list.items[0].id, { save: false });
  markSelection();
  if (!list.items.length && list.state === 'loaded') showTable(null);
  showResults(list);
  applyAccess();
  // Ctrl+End's album, now that its page came.
  if (app.goingTo != null && list.at(app.goingTo)) select(list.at(app.goingTo).id);
}

/**
 * The results line under the toolbar, for a search (and an empty library): its request's
 * state, `loading`, `loaded`, `error` or `empty`, in words (a polite live region).
 */
function showResults(list) {
  const query = list.query;
  const state = list.state === 'loading' ? 'loading' : list.state === 'failed' ? 'error'
    : list.items.length ? 'loaded' : 'empty';
  const quoted = `“${query}”`;
  const count = `${list.total ?? list.items.length}${list.total == null && list.next ? '+' : ''}`;
  const text = {
    loading: query ? `Searching for ${quoted}…` : '',
    loaded: query ? `${count} album${count === '1' ? '' : 's'} match ${quoted}. Escape shows every album.` : '',
    error: query ? `The search for ${quoted} failed: ${list.reason}` : '',
    empty: query ? `No album matches ${quoted}. Escape shows every album.` : 'No albums here yet.',
  }[state];
  document.documentElement.dataset.results = query ? state : 'all';
  ui.results.dataset.state = state;
  if (ui.results.textContent !== text) ui.results.textContent = text;
  ui.results.hidden = !text;
}

async function reload() {
  clearBanner();
  app.farSelected = null;
  const keep = app.selected;
  await app.list.load();
  if (keep && app.list.indexOf(keep) >= 0) app.selected = keep;
  render();
  app.scroller.retryFailed();
}

function markSelection() {
  // Albums that went (deleted, moved, another search) leave the selection.
  if (app.list) for (const id of app.chosen) if (app.list.indexOf(id) < 0) app.chosen.delete(id);
  if (app.selected) app.chosen.add(app.selected);
  app.scroller.mark(app.selected, app.chosen);
  if (app.list) app.table.show(app.list, app.selected, app.list.sort, app.chosen);
  const several = app.chosen.size > 1;
  ui.covers.toggleAttribute('data-several', several);
  ui.grid.toggleAttribute('data-several', several);
  ui.remove.textContent = several ? `Delete ${app.chosen.size}` : 'Delete';
  ui.remove.setAttribute('aria-label', several ? `Delete ${app.chosen.size} albums` : 'Delete');
  ui.move.setAttribute('aria-label', `Move ${several ? `${app.chosen.size} albums` : 'album'} to library…`);
  ui.remove.disabled = !app.selected;
  ui.edit.disabled = !app.selected || several;
  ui.move.disabled = !app.selected;
}

/** The albums selected together, in the list's order. */
function chosenItems() {
  return app.list.loadedItems().filter((item) => app.chosen.has(item.id));
}

/**
 * Selects with the mouse's or the keys' modifiers: `range` (Shift) selects from the anchor to
 * `id`, `toggle` (Ctrl/Cmd) adds or takes `id` out, `one` selects it alone. Several at once
 * only in a library (a view's albums are in several).
 */
function choose(id, mode = 'one') {
  const list = app.list;
  if (list.source.isView) mode = 'one';
  if (mode === 'range') {
    const from = list.indexOf(app.anchor ?? app.selected);
    const to = list.indexOf(id);
    if (from < 0 || to < 0) return select(id);
    app.chosen = new Set(list.range(from, to).map((item) => item.id));
    select(id, { keep: true });
  } else if (mode === 'toggle') {
    app.anchor = id;
    if (app.chosen.has(id) && app.chosen.size > 1) {
      app.chosen.delete(id);
      const rest = chosenItems();
      select(rest[rest.length - 1].id, { keep: true });
    } else {
      app.chosen.add(id);
      select(id, { keep: true });
    }
  } else {
    select(id);
  }
  if (app.chosen.size > 1) announce(`${app.chosen.size} albums selected.`);
}

function selectedItem() {
  const at = app.list.indexOf(app.selected);
  if (at >= 0) return app.list.at(at);
  return app.farSelected?.item.id === app.selected ? app.farSelected.item : null;
}

/** Where the selected album is: its index, also when it is far and no longer loaded; -1 when none. */
function selectedIndex() {
  const at = app.list.indexOf(app.selected);
  if (at >= 0 || !app.selected) return at;
  return app.farSelected?.item.id === app.selected ? app.farSelected.index : -1;
}

/** The album at `index`, or the loaded one nearest before it (after a deletion): null when none is. */
function itemNear(index) {
  const list = app.list;
  const at = Math.min(Math.max(index, 0), list.lastIndex);
  return at < 0 ? null : (list.at(at) ?? list.nearest(at, 0) ?? null);
}

function select(id, { save = true, keep = false } = {}) {
  app.goingTo = null;
  const changed = app.selected !== id;
  app.selected = id;
  const where = app.list.indexOf(id);
  if (where >= 0) app.farSelected = where >= app.list.items.length ? { item: app.list.at(where), index: where } : null;
  // A plain selection (a click, an arrow) is one album again, and the anchor of the next range.
  if (!keep) {
    app.chosen = new Set(id ? [id] : []);
    app.anchor = id;
  }
  markSelection();
  if (app.layout === 'list') app.table.reveal(app.list.indexOf(id));
  else app.scroller.reveal(app.list.indexOf(id), !reducedMotion.matches);
  if (!changed) return;
  // Another album: an edit not saved is left (its form would show the wrong album).
  if (app.editing) closeEdit({ focus: false });
  const item = selectedItem();
  showTable(item);
  if (save && item) saveState(item);
  if (item && app.list.source.isView && app.list.libraryOf(item) !== app.undoLibrary) refreshUndo();
  // Near the end of the loaded prefix: load the next page before it is reached.
  const index = app.list.indexOf(id);
  if (index < app.list.items.length && index >= app.list.items.length - 5) app.list.more();
}

/**
 * The memento: the selected album, saved for this browser (debounced) with PUT /state. A
 * write-protected server without a token in this tab does not prompt for one just to save
 * a selection, and a key that may not write cannot save it: it is then kept in localStorage
 * until a key that may is given.
 */
function saveState(item) {
  clearTimeout(app.saveTimer);
  app.saveTimer = setTimeout(() => {
    if (app.selected !== item.id || app.list.indexOf(item.id) < 0) return;
    const library = app.list.libraryOf(item);
    const local = `bluelibrary.selected.${app.list.source.key}`;
    const keepLocally = () => localStorage.setItem(local, JSON.stringify({ albumID: item.id, updatedAt: new Date().toISOString() }));
    // A key that may not write here cannot save it on the server: this browser keeps it.
    if (!app.access.mayWrite([library])) { keepLocally(); return; }
    app.api.put(`${libraryPrefix(library)}state?client=${seg(app.client)}`, { albumID: item.id }, { prompt: false })
      .then(() => { localStorage.removeItem(local); })
      .catch((error) => {
        if (error.status === 401 || error.status === 403) keepLocally();
        // 422: the album went meanwhile (deleted elsewhere); the next selection is saved instead.
        else if (error.status !== 422) report(error, 'Saving the selected album');
      });
  }, 250);
}

function localSelection(source) {
  try { return JSON.parse(localStorage.getItem(`bluelibrary.selected.${source.key}`)); } catch { return null; }
}

/** Selects the album this browser saved last (paging on until it is loaded, within reason). */
async function restoreSelection() {
  const list = app.list;
  const libraries = list.source.isView ? list.source.libraries : [list.source.id];
  const states = await Promise.all(libraries.map((lib) =>
    app.api.get(`${libraryPrefix(lib)}state?client=${seg(app.client)}`).then((r) => r.data).catch(() => null)));
  if (app.list !== list) return;
  states.push(localSelection(list.source));
  const saved = states.filter((s) => s?.updatedAt && s.albumID).sort((a, b) => b.updatedAt.localeCompare(a.updatedAt))[0];
  if (saved) {
    for (let pages = 0; list.indexOf(saved.albumID) < 0 && list.next && pages < 20; pages += 1) await list.more(500);
    if (app.list !== list) return;
    if (list.indexOf(saved.albumID) >= 0) {
      app.selected = saved.albumID;
      render();
      showTable(selectedItem());
      select(saved.albumID, { save: false });
      return;
    }
  }
  if (list.items.length) select(list.items[0].id, { save: false });
}

async function showTable(item) {
  const request = ++app.tableRequest;
  const head = ui.details.tHead.rows[0];
  const body = ui.details.tBodies[0].rows[0];
  if (!item) {
    head.replaceChildren();
    body.replaceChildren();
    ui.details.caption.textContent = 'No album selected';
    ui.detailCover.hidden = true;
    return;
  }
  const prefix = libraryPrefix(app.list.libraryOf(item));
  showDetailCover(item);
  try {
    const { data } = await app.api.get(`${prefix}albums/${seg(item.id)}/table`);
    if (request !== app.tableRequest) return;
    head.replaceChildren(...data.titles.map((title) => Object.assign(document.createElement('th'), { scope: 'col', textContent: title })));
    body.replaceChildren(...data.values.map((value, i) => {
      const cell = Object.assign(document.createElement('td'), { textContent: value });
      cell.dataset.title = data.titles[i];
      return cell;
    }));
    ui.details.caption.textContent = `Selected album: ${item.title}`;
  } catch (error) {
    if (request === app.tableRequest) report(error, 'Loading the album details');
  }
}

/** The selected album's cover, large, beside its details (asked for again on each call). */
function showDetailCover(item) {
  ui.detailCover.hidden = false;
  showCover(app.api, ui.detailCover, `${libraryPrefix(app.list.libraryOf(item))}albums/${seg(item.id)}/cover`, item);
}

// ---- Live events ---------------------------------------------------------------------------

async function onEvent(type, data) {
  if (type === 'cover.loaded') {
    app.scroller.retry(data.coverUrl);
    const item = selectedItem();
    if (item?.coverUrl === data.coverUrl && ui.detailCover.dataset.state === 'failed') showDetailCover(item);
  }
  if (!type.startsWith('album.') && !type.startsWith('library.')) return;
  const before = app.list.indexOf(app.selected);
  const changed = await app.list.merge(type, data);
  // Nothing merged (an event the list already has, one beyond what is loaded, or a list that
  // only goes outdated, which its change event shows): no render, so a burst of thousands of
  // events (an import) costs little.
  if (!changed) {
    if (type === 'album.updated' && data.id === app.selected) showTable(selectedItem());
    refreshUndo();
    return;
  }
  if (type.startsWith('library.')) app.scroller.retryFailed();
  // The selected album went (a far one no longer loaded is not known to have gone: it stays).
  if (app.selected && before >= 0 && app.list.indexOf(app.selected) < 0) {
    app.selected = itemNear(before)?.id ?? null;
    showTable(selectedItem());
  }
  render();
  if (type === 'album.updated' && data.id === app.selected) showTable(selectedItem());
  refreshUndo();
}

// ---- Toolbar -------------------------------------------------------------------------------

function undoLibrary() {
  const item = selectedItem();
  return item ? app.list.libraryOf(item) : (app.list.source.isView ? app.list.source.libraries[0] : app.list.source.id);
}

/**
 * Reads the undo state again: at most one read at a time and one waiting after it (shared by
 * every call meanwhile), so a burst of events (an import of thousands elsewhere) is a few reads.
 */
function refreshUndo() {
  if (!app.undoNext) {
    app.undoNext = (app.undoRun || Promise.resolve()).then(() => {
      app.undoNext = null;
      return (app.undoRun = readUndo());
    });
  }
  return app.undoNext;
}

async function readUndo() {
  const library = undoLibrary();
  if (!library) return;
  const etag = library === app.undoLibrary ? app.undoETag : null;
  try {
    const answer = await app.api.get(`${libraryPrefix(library)}undo`, { etag });
    app.undoLibrary = library;
    if (answer.status === 304) return;
    app.undoETag = answer.etag;
    const { canUndo, next } = answer.data;
    ui.undo.disabled = !canUndo;
    ui.undo.title = canUndo ? `Undo: ${next}` : 'Nothing to undo';
  } catch (error) {
    ui.undo.disabled = true;
    ui.undo.title = `Undo unavailable: ${error.message}`;
  }
}

async function deleteSelected() {
  if (app.chosen.size > 1) return deleteChosen();
  const item = selectedItem();
  if (!item) return;
  const at = app.list.indexOf(item.id);
  ui.remove.disabled = true;
  try {
    await app.api.delete(`${libraryPrefix(app.list.libraryOf(item))}albums/${seg(item.id)}`);
  } catch (error) {
    ui.remove.disabled = false;
    if (error.status === 403) refreshAccess();
    if (error.status !== 404) return report(error, `Deleting “${item.title}”`);
  }
  app.list.remove(item.id);
  app.selected = null;
  render();
  const next = itemNear(at);
  if (next) select(next.id);
  announce(`Deleted “${item.title}”.`);
  refreshUndo();
  listFocus().focus();
}

// ---- Several at once: one POST /batch -------------------------------------------------------

const plural = (n) => `${n} album${n === 1 ? '' : 's'}`;

/**
 * Sends `operations` (one per item of `items`) as one batch to the library shown: all or
 * nothing, one undo step. A refusal names its operation (`operations[k]…`): the banner says
 * which album it was and why, and that nothing was changed. Resolves to the answer, or null.
 */
async function sendBatch(operations, items, doing) {
  const library = app.list.source.id;
  try {
    const { data } = await app.api.post(`${libraryPrefix(library)}batch`, { operations });
    return data;
  } catch (error) {
    if (error.status === 403) refreshAccess();
    const field = error.errors?.[0]?.field || '';
    const at = /^operations\[(\d+)\]/.exec(field);
    const item = at ? items[Number(at[1])] : null;
    if (error instanceof Problem && error.status !== 429) {
      const which = item ? ` at “${item.title}” (${item.artist})` : '';
      announce(`${doing} was refused${which}: ${error.message}`, { kind: 'error' });
      if (item && app.list.indexOf(item.id) >= 0) select(item.id, { keep: true, save: false });
    } else {
      report(error, doing);
    }
    return null;
  }
}

/** Takes the albums a batch deleted or moved out of the list, and selects the one after them. */
function afterBatch(items) {
  const at = app.list.indexOf(items[0].id);
  for (const item of items) app.list.remove(item.id);
  app.selected = null;
  app.chosen = new Set();
  render();
  const next = itemNear(at);
  if (next) select(next.id);
  refreshUndo();
  listFocus().focus();
}

/** Delete with several albums selected: one batch of deletes by id. */
async function deleteChosen() {
  const items = chosenItems();
  ui.remove.disabled = true;
  const data = await sendBatch(items.map((item) => ({ op: 'delete', id: item.id })), items, `Deleting ${plural(items.length)}`);
  ui.remove.disabled = false;
  if (!data) return;
  afterBatch(items);
  announce(`Deleted ${plural(items.length)}. Undo brings them all back.`);
}

/** *Move to library…*: a dialog with the other libraries this key may write to. */
async function openMoveDialog() {
  const items = chosenItems();
  if (!items.length || app.list.source.isView) return;
  const here = app.list.source.id;
  let libraries;
  try {
    libraries = (await app.api.get('libraries')).data.libraries;
  } catch (error) {
    return report(error, 'Listing the libraries');
  }
  const others = libraries.filter((lib) => lib.id !== here && app.access.mayWrite([here, lib.id]));
  if (!others.length) return announce('There is no other library to move to (the key in use may write to none).');
  const select = ui.moveForm.elements.library;
  select.replaceChildren(...others.map((lib) => Object.assign(document.createElement('option'), { value: lib.id, textContent: lib.name || lib.id })));
  $('move-what').textContent = items.length === 1 ? `“${items[0].title}” (${items[0].artist})` : `${plural(items.length)}: ${items.map((item) => `“${item.title}”`).join(', ')}`;
  ui.moveDialog.items = items;
  ui.moveDialog.showModal();
  select.focus();
}

/** Moves the albums to the library chosen: one batch of moves with a `library`. */
async function submitMove(event) {
  event.preventDefault();
  const items = ui.moveDialog.items || [];
  const select = ui.moveForm.elements.library;
  const library = select.value;
  const name = select.selectedOptions[0]?.textContent || library;
  ui.moveDialog.close();
  listFocus().focus();
  if (!items.length || !library) return;
  const data = await sendBatch(items.map((item) => ({ op: 'move', id: item.id, library })), items, `Moving ${plural(items.length)} to ${name}`);
  if (!data) return;
  afterBatch(items);
  announce(`Moved ${plural(items.length)} to ${name}. Undo brings them back.`);
}

async function undo() {
  const library = undoLibrary();
  // Disabling the focused button drops the focus: it is given back when Undo is enabled again.
  const focused = document.activeElement === ui.undo;
  ui.undo.disabled = true;
  try {
    const { data } = await app.api.post(`${libraryPrefix(library)}undo?client=${seg(app.client)}`);
    if (data.album && !app.list.source.isView) {
      app.list.place(data.album, data.album.index);
      render();
      select(data.album.id);
    } else if (app.list.inLibraryOrder) {
      // A batch taken back (several albums at once): their events' indexes are those after the
      // whole undo, so the list is read again (the events up to its version are then skipped).
      await reload();
    }
    announce(`Undone: ${data.undone}.`);
  } catch (error) {
    if (error.status === 403) refreshAccess();
    report(error, 'Undo');
  }
  app.undoETag = null;
  await refreshUndo();
  if (focused && (document.activeElement === document.body || document.activeElement === null)) {
    (ui.undo.disabled ? listFocus() : ui.undo).focus();
  }
}

function openAddDialog() {
  clearErrors(ui.addForm);
  ui.addForm.reset();
  ui.addDialog.showModal();
  ui.addForm.elements.title.focus();
}

async function submitAdd(event) {
  event.preventDefault();
  const form = ui.addForm;
  const body = albumBody(form);
  const source = app.list.source;
  const path = source.isView ? `views/${seg(source.id)}/albums` : `${libraryPrefix(source.id)}albums`;
  const submit = form.querySelector('[type=submit]');
  submit.disabled = true;
  try {
    const { data } = await app.api.post(`${path}?client=${seg(app.client)}`, body);
    ui.addDialog.close();
    if (!app.list.inLibraryOrder) {
      app.list.markOutdated(source.isView ? 'The view changed - reload' : `Added - reload to see it in the ${app.list.query ? 'search' : 'sorted list'}`);
    } else {
      app.list.place(data, data.index);
    }
    render();
    if (app.list.indexOf(data.id) >= 0) select(data.id);
    announce(`Added “${data.title}” at position ${data.index}.`);
    refreshUndo();
    listFocus().focus();
  } catch (error) {
    if (error.status === 403) refreshAccess();
    if (error instanceof Problem && error.status !== 429) showErrors(form, error);
    else { ui.addDialog.close(); report(error, 'Adding the album'); }
  } finally {
    submit.disabled = false;
  }
}

/**
 * An import into the library shown: its events up to the import's version are not merged one
 * by one (there may be 100,000); the list is read again instead.
 */
async function imported(answer, text) {
  const list = app.list;
  if (typeof answer.version === 'number') list.version = Math.max(list.version, answer.version);
  await reload();
  announce(text);
  app.undoETag = null;
  refreshUndo();
}

// ---- Edit in place -------------------------------------------------------------------------

/** Shows the edit form in place of the details table, with the album's fields read afresh. */
async function openEdit() {
  const item = selectedItem();
  if (!item || ui.edit.hidden) return;
  const library = app.list.libraryOf(item);
  try {
    const { data, etag } = await app.api.get(`${libraryPrefix(library)}albums/${seg(item.id)}`);
    if (app.selected !== item.id) return;
    app.editing = { id: item.id, library, album: data, etag };
  } catch (error) {
    if (error.status === 404) return announce(`“${item.title}” was deleted meanwhile.`);
    return report(error, `Opening “${item.title}” for editing`);
  }
  clearErrors(ui.editForm);
  fillAlbum(ui.editForm, app.editing.album);
  // The form is the cover's next view: a cover that failed is asked for again.
  if (ui.detailCover.dataset.state === 'failed') showDetailCover(item);
  ui.details.hidden = true;
  ui.editForm.hidden = false;
  ui.edit.setAttribute('aria-expanded', 'true');
  ui.editForm.elements.title.focus();
}

function closeEdit({ focus = true } = {}) {
  app.editing = null;
  ui.editForm.hidden = true;
  ui.details.hidden = false;
  ui.edit.setAttribute('aria-expanded', 'false');
  if (focus) (ui.edit.hidden ? listFocus() : ui.edit).focus();
}

/** An album the server answered (after an edit): in the list where it was, and on screen. */
function showEdited(album, library) {
  const at = app.list.indexOf(album.id);
  if (at >= 0) app.list.set(at, app.list.source.isView ? { ...album, library } : album);
  render();
  showTable(selectedItem());
}

/**
 * Saves the fields that changed with PATCH and If-Match. 422: the errors beside the fields.
 * 412 (changed meanwhile): the form shows the album as it is now, says so, and overwrites nothing.
 */
async function submitEdit(event) {
  event.preventDefault();
  const editing = app.editing;
  if (!editing) return;
  const form = ui.editForm;
  const patch = albumPatch(form, editing.album);
  if (!Object.keys(patch).length) { closeEdit(); return; }
  const path = `${libraryPrefix(editing.library)}albums/${seg(editing.id)}`;
  const submit = form.querySelector('[type=submit]');
  submit.disabled = true;
  try {
    const { data } = await app.api.patch(path, patch, editing.etag);
    if (app.editing !== editing) return;
    closeEdit();
    showEdited(data, editing.library);
    announce(`Saved “${data.title}”.`);
    refreshUndo();
  } catch (error) {
    if (app.editing !== editing) return;
    if (error.status === 412) return changedMeanwhile(editing, patch);
    if (error.status === 403) refreshAccess();
    if (error.status === 404) { closeEdit(); announce(`“${editing.album.title}” was deleted meanwhile.`); return; }
    if (error instanceof Problem && error.status === 422) showErrors(form, error);
    else { closeEdit(); report(error, `Saving “${editing.album.title}”`); }
  } finally {
    submit.disabled = false;
  }
}

const FIELD_NAMES = { title: 'Title', artist: 'Artist', genre: 'Genre', year: 'Year', coverUrl: 'Cover URL' };

/** The 412: reads the album again, shows its current values, and says what was not saved. */
async function changedMeanwhile(editing, patch) {
  try {
    const { data, etag } = await app.api.get(`${libraryPrefix(editing.library)}albums/${seg(editing.id)}`);
    if (app.editing !== editing) return;
    editing.album = data;
    editing.etag = etag;
    clearErrors(ui.editForm);
    fillAlbum(ui.editForm, data);
    const yours = Object.entries(patch).map(([name, value]) => `${FIELD_NAMES[name]} “${value ?? ''}”`).join(', ');
    ui.editNote.textContent = `Someone changed this album meanwhile: these are its current values. Nothing was saved (yours: ${yours}).`;
    ui.editNote.hidden = false;
    showEdited(data, editing.library);
    ui.editForm.elements.title.focus();
  } catch (error) {
    closeEdit();
    if (error.status === 404) announce(`“${editing.album.title}” was deleted meanwhile.`);
    else report(error, 'Reading the album again');
  }
}

// ---- Reorder ---------------------------------------------------------------------------------

/** Whether albums may be moved here: a library's own order, with a key that may write to it. */
function canReorder() {
  return Boolean(app.list?.inLibraryOrder) && app.access.mayWrite(sourceLibraries());
}

const NOT_HERE = 'Albums can be moved in a library\'s own order only (not in a search, a sorted list or a view).';

/**
 * Moves the selected album one place (`step` -1 or 1), one move per key press (a press while
 * one is on its way is ignored). Only in the library's own order: a search, a sorted list or a
 * view has no place to move to.
 */
function moveSelected(step) {
  const item = selectedItem();
  if (!item || app.moving || !app.access.mayWrite(sourceLibraries())) return;
  if (!app.list.inLibraryOrder) { announce(NOT_HERE); return; }
  const to = app.list.indexOf(item.id) + step;
  if (to >= 0 && to <= app.list.lastIndex) moveAlbum(item, to);
}

/** `POST /albums/{id}/move` to `to`; the album stays (or becomes) the selected one. */
async function moveAlbum(item, to) {
  const list = app.list;
  app.moving = true;
  try {
    const { data } = await app.api.post(`${libraryPrefix(list.source.id)}albums/${seg(item.id)}/move`, { index: to });
    if (app.list !== list) return;
    list.place(data, data.index);
    render();
    select(data.id, { save: false });
    announce(`Moved “${data.title}” to position ${data.index}.`);
    refreshUndo();
  } catch (error) {
    if (error.status === 403) refreshAccess();
    report(error, `Moving “${item.title}”`);
  } finally {
    app.moving = false;
  }
}

/**
 * Drag and drop on the covers (`vertical` false) or the list view's rows: an album dropped on
 * the left (upper) half of another goes before it, on the right (lower) half after it; one
 * move per drop. The mark between covers (rows) shows where.
 */
function wireDragAndDrop(container, selector, vertical) {
  let dragged = null;
  const clear = () => {
    for (const element of container.querySelectorAll('.drop-before, .drop-after')) element.classList.remove('drop-before', 'drop-after');
  };
  const spot = (event) => {
    const element = event.target.closest?.(selector);
    if (!dragged || !element || element.dataset.id === dragged) return null;
    const box = element.getBoundingClientRect();
    return { element, after: vertical ? event.clientY > box.top + box.height / 2 : event.clientX > box.left + box.width / 2 };
  };
  container.addEventListener('dragstart', (event) => {
    const element = event.target.closest?.(selector);
    if (!element || app.moving || !canReorder()) {
      event.preventDefault();
      if (element && !app.list?.inLibraryOrder) announce(NOT_HERE);
      return;
    }
    dragged = element.dataset.id;
    event.dataTransfer.effectAllowed = 'move';
    event.dataTransfer.setData('text/plain', element.getAttribute('aria-label') || element.textContent);
    select(dragged);
  });
  container.addEventListener('dragover', (event) => {
    const target = spot(event);
    clear();
    if (!target) return;
    event.preventDefault();
    event.dataTransfer.dropEffect = 'move';
    target.element.classList.add(target.after ? 'drop-after' : 'drop-before');
  });
  container.addEventListener('dragleave', (event) => { if (!container.contains(event.relatedTarget)) clear(); });
  container.addEventListener('drop', (event) => {
    const target = spot(event);
    clear();
    if (!target) return;
    event.preventDefault();
    const from = app.list.indexOf(dragged);
    const at = app.list.indexOf(target.element.dataset.id);
    dragged = null;
    // `to` is where the album ends up: after it leaves its place, those behind it move up one.
    let to = target.after ? at + 1 : at;
    if (to > from) to -= 1;
    if (from >= 0 && at >= 0 && to !== from) moveAlbum(app.list.at(from), to);
  });
  container.addEventListener('dragend', () => { dragged = null; clear(); });
}

// ---- Covers or list, and the list's order ----------------------------------------------------

/** The element that holds the album selection in the layout shown. */
function listFocus() { return app.layout === 'list' ? ui.grid : ui.covers; }

/** Shows the covers or the list (and remembers which in this browser). */
function setLayout(layout, { focus = false } = {}) {
  app.layout = layout;
  localStorage.setItem(LAYOUT_KEY, layout);
  ui.covers.hidden = layout !== 'covers';
  ui.grid.hidden = layout !== 'list';
  ui.showCovers.setAttribute('aria-pressed', String(layout === 'covers'));
  ui.showList.setAttribute('aria-pressed', String(layout === 'list'));
  document.querySelector('[role=toolbar]').setAttribute('aria-controls', listFocus().id);
  document.documentElement.dataset.layout = layout;
  if (app.list) {
    if (layout === 'covers') {
      app.scroller.render(app.list);
      markSelection();
    }
    app.table.show(app.list, app.selected, app.list.sort);
    if (app.selected) select(app.selected, { save: false });
  }
  if (focus) listFocus().focus();
}

/** A column header asked for another order: the list is read again from the server in it. */
async function sortBy(sort) {
  const list = app.list;
  if (!list) return;
  app.sort = sort;
  app.goingTo = null;
  app.farSelected = null;
  clearBanner();
  const keep = app.selected;
  ui.grid.scrollTop = 0;
  app.scroller.home();
  app.scroller.render(null);
  await list.sortBy(sort);
  if (app.list !== list) return;
  if (keep && list.indexOf(keep) < 0) app.selected = null;
  render();
  announce(sort ? `Sorted by ${sort.replace(/^-/, '').replace('createdAt', 'date added')}, ${sort.startsWith('-') ? 'descending' : 'ascending'}.` : 'In the library\'s order.');
}

/** What the search box asks for: '' while it holds no letter or digit (nothing to search for). */
function searchQuery() {
  const text = ui.search.value.trim();
  return /[\p{L}\p{N}]/u.test(text) ? text : '';
}

/**
 * Searches as the user types: from three characters on at once (the request of the key before
 * is cancelled), shorter text (which matches much more) a moment after the last key.
 */
function onSearchInput() {
  clearTimeout(app.searchTimer);
  if (searchQuery().length >= 3) runSearch();
  else app.searchTimer = setTimeout(runSearch, 250);
}

/** Asks for what the box holds now (the list shows its states meanwhile). */
async function runSearch() {
  clearTimeout(app.searchTimer);
  const query = searchQuery();
  const list = app.list;
  if (!list || list.query === query) return;
  app.goingTo = null;
  app.farSelected = null;
  clearBanner();
  app.selected = null;
  app.scroller.render(null);
  app.scroller.home();
  await list.search(query);
  if (app.list === list) render();
}

/** Alt with an arrow moves the selected album: left/up one place earlier, right/down one later. */
const MOVE_KEYS = { ArrowLeft: -1, ArrowUp: -1, ArrowRight: 1, ArrowDown: 1 };

function onKey(event) {
  const list = app.list;
  if (!list?.items.length || event.target.closest('button')) return;
  if (event.altKey && MOVE_KEYS[event.key]) {
    // Also keeps the browser from taking Alt+Left as "back".
    event.preventDefault();
    if (!event.repeat) moveSelected(MOVE_KEYS[event.key]);
    return;
  }
  if ((event.ctrlKey || event.metaKey) && event.key.toLowerCase() === 'a' && !app.list.source.isView) {
    // Every album loaded.
    event.preventDefault();
    const items = list.loadedItems();
    app.anchor = items[0].id;
    choose(items[items.length - 1].id, 'range');
    return;
  }
  if ((event.ctrlKey || event.metaKey) && (event.key === 'Home' || event.key === 'End')) {
    // The very first or last album, loaded or not (far away, it is read by offset).
    event.preventDefault();
    goTo(event.key === 'Home' ? 0 : list.lastIndex);
    return;
  }
  const at = Math.max(0, selectedIndex());
  const page = app.layout === 'list' ? app.table.pageRows : 5;
  // End: the last album loaded (the island's, when one was read far beyond the prefix).
  const end = list.island ? list.island.start + list.island.items.length - 1 : list.items.length - 1;
  const target = {
    ArrowRight: at + 1, ArrowDown: at + 1, ArrowLeft: at - 1, ArrowUp: at - 1, Home: 0, End: end,
    PageDown: at + page, PageUp: at - page,
  }[event.key];
  if (event.key === 'F2') {
    event.preventDefault();
    if (!ui.edit.hidden && !ui.edit.disabled) openEdit();
    return;
  }
  if (event.key === 'Delete') {
    event.preventDefault();
    if (!ui.remove.hidden) deleteSelected();
    return;
  }
  if (target === undefined) return;
  event.preventDefault();
  // A row not loaded yet (past the island's end): the nearest loaded on the way; its page is
  // asked for as the view reaches it.
  const index = Math.min(Math.max(target, 0), list.lastIndex);
  const item = list.at(index) ?? list.nearest(index, at);
  // Nothing loaded on the way (the selected album far, its rows replaced meanwhile): go there.
  if (!item) { goTo(index); return; }
  if (event.shiftKey) choose(item.id, 'range'); else select(item.id);
}

/**
 * Selects the album at `index`. Not loaded yet, its place is shown (which reads its page) and
 * it is selected once its page is here (render does it).
 */
function goTo(index) {
  const item = app.list.at(index);
  if (item) { select(item.id); return; }
  app.goingTo = index;
  if (app.layout === 'list') app.table.reveal(index); else app.scroller.reveal(index, false);
}

/** The mouse's modifiers: Shift for a range, Ctrl (Cmd on a Mac) to add or take out one. */
const clickMode = (event) => (event.shiftKey ? 'range' : event.ctrlKey || event.metaKey ? 'toggle' : 'one');

/** `/` goes to the search box (unless typing in a field or a dialog is open). */
function onDocumentKey(event) {
  if (event.key !== '/' || event.ctrlKey || event.metaKey || event.altKey || event.defaultPrevented) return;
  const target = event.target;
  if (target.closest?.('input, textarea, select, [contenteditable]') || document.querySelector('dialog[open]')) return;
  event.preventDefault();
  ui.search.focus();
  ui.search.select();
}

/** Escape in the search box: clears it and shows the whole list at once; empty, back to the list. */
function onSearchKey(event) {
  if (event.key !== 'Escape') return;
  event.preventDefault();
  if (!ui.search.value) { listFocus().focus(); return; }
  ui.search.value = '';
  runSearch();
}

// ---- The key ----------------------------------------------------------------------------

/** The libraries a change in the current source lands in (a view: its sources). */
function sourceLibraries() {
  const source = app.list?.source;
  if (!source) return [];
  return source.isView ? source.libraries : [source.id];
}

/** Asks the server what the key in this tab may do, then shows it. */
async function refreshAccess() {
  app.access = await Access.load(app.api);
  applyAccess();
}

/**
 * The header's line and key button, and the toolbar: Add, Delete and Undo need `write` for
 * the source's libraries; without it they are hidden (out of the tab order and of the
 * accessibility tree) and a line says the source is read-only here.
 */
function applyAccess() {
  const access = app.access;
  ui.access.textContent = access.describe();
  ui.key.hidden = !access.locked;
  ui.key.textContent = access.key ? 'Change key' : 'Enter key';
  const write = access.mayWrite(sourceLibraries());
  for (const button of [ui.edit, ui.add, ui.remove, ui.undo]) button.hidden = !write;
  // Moving to another library: from a library only (a view's albums are in several).
  ui.move.hidden = !write || Boolean(app.list?.source.isView);
  if (!write && app.editing) closeEdit({ focus: false });
  ui.readOnly.hidden = write;
  // Managing libraries: an admin key for every library, or a server without the lock.
  ui.manage.hidden = !(access.self && (!access.locked || (access.key && access.mayAdminister())));
  document.documentElement.dataset.access = write ? 'write' : 'read';
}

/** The header's key button: another key for this tab, then everything is read again with it. */
async function changeKey() {
  const token = await askToken({ message: 'Enter an access key (or the server\'s token); it is kept in this tab only.' }, {
    title: app.access.key ? 'Change key' : 'Enter key',
    current: app.access.key ? app.access.describe() : '',
  });
  ui.key.focus();
  if (!token) return;
  app.api.token = token;
  await refreshAccess();
  const generation = ++app.opening;
  const { views } = await loadSources();
  if (generation === app.opening) open(chosenSource(views));
}

// ---- Start ---------------------------------------------------------------------------------

async function start() {
  performance.mark('main.js starts');
  // Covers in view not loaded: just past the prefix its next page (500 at a time when a little
  // further), far beyond it a page read by offset around them (AlbumList.need).
  app.scroller = new CoverScroller(ui.covers, app.api, (first, last) => {
    const list = app.list;
    if (!list) return;
    if (last < list.items.length) list.more();
    else list.need(first, last, last >= list.items.length + 10 ? 500 : list.pageSize);
  });
  app.table = new AlbumTable(ui.grid, { onSelect: (id, event) => choose(id, clickMode(event)), onSort: sortBy });
  connect({
    askToken: (problem) => askToken(problem, { current: app.access.key ? app.access.describe() : '' }),
    onToken: () => refreshAccess(),
  });
  // The first page of the source shown last was asked for by first.js before this module ran;
  // it is shown as soon as it is here (now, if it already is), while the key's rights and the
  // switcher's libraries and views are read (in parallel): not four answers one after another.
  const wanted = first.list.source;
  const list = newList(wanted, first.list);
  if (list.state !== 'loading') render();
  ui.covers.addEventListener('keydown', onKey);
  ui.grid.addEventListener('keydown', onKey);
  wireDragAndDrop(ui.covers, '[role=option]', false);
  wireDragAndDrop(ui.grid, '[role=row][data-id]', true);
  ui.showCovers.addEventListener('click', () => setLayout('covers', { focus: true }));
  ui.showList.addEventListener('click', () => setLayout('list', { focus: true }));
  setLayout(app.layout);
  ui.covers.addEventListener('click', (event) => {
    const option = event.target.closest('[role=option]');
    if (option) { choose(option.dataset.id, clickMode(event)); ui.covers.focus(); }
  });
  // The toolbar: left and right move between its enabled buttons (each also stays a tab stop).
  document.querySelector('[role=toolbar]').addEventListener('keydown', (event) => {
    const step = { ArrowRight: 1, ArrowLeft: -1 }[event.key];
    if (!step) return;
    const buttons = [...event.currentTarget.querySelectorAll('button:not(:disabled):not([hidden])')];
    const at = buttons.indexOf(document.activeElement);
    if (at < 0) return;
    event.preventDefault();
    buttons[(at + step + buttons.length) % buttons.length].focus();
  });
  ui.remove.addEventListener('click', deleteSelected);
  ui.undo.addEventListener('click', undo);
  ui.add.addEventListener('click', openAddDialog);
  ui.search.addEventListener('input', onSearchInput);
  ui.search.addEventListener('keydown', onSearchKey);
  document.addEventListener('keydown', onDocumentKey);
  ui.move.addEventListener('click', openMoveDialog);
  const manager = new LibraryManager(app.api, { onChange: librariesChanged });
  ui.manage.addEventListener('click', () => manager.open(ui.manage));
  const transfer = new Transfer(app.api, {
    current: () => ({
      source: app.list.source,
      name: ui.source.selectedOptions[0]?.textContent || app.list.source.id,
      count: app.list.total ?? app.list.items.length,
      // The CSV is of the list as shown: its search and its order.
      filter: [app.list.query && `&q=${seg(app.list.query)}`, app.list.sort && `&sort=${seg(app.list.sort)}`].filter(Boolean).join(''),
    }),
    mayWrite: () => app.access.mayWrite(sourceLibraries()),
    done: imported,
  });
  $('transfer').addEventListener('click', () => transfer.open($('transfer')));
  ui.moveForm.addEventListener('submit', submitMove);
  $('move-cancel').addEventListener('click', () => { ui.moveDialog.close(); listFocus().focus(); });
  ui.key.addEventListener('click', changeKey);
  ui.addForm.addEventListener('submit', submitAdd);
  ui.edit.addEventListener('click', openEdit);
  ui.editForm.addEventListener('submit', submitEdit);
  $('edit-cancel').addEventListener('click', () => closeEdit());
  ui.editForm.addEventListener('keydown', (event) => {
    if (event.key === 'Escape') { event.preventDefault(); closeEdit(); }
  });
  $('add-cancel').addEventListener('click', () => ui.addDialog.close());
  ui.source.addEventListener('change', async () => {
    // Switching again before this one got its answers: only the last choice is opened.
    const generation = ++app.opening;
    localStorage.setItem('bluelibrary.source', ui.source.value);
    const { views } = await loadSources();
    if (generation === app.opening) open(chosenSource(views));
  });
  const access = refreshAccess();
  const { views } = await loadSources();
  const source = chosenSource(views);
  // The source saved is gone (a library deleted meanwhile): the early list gives way to default.
  if (source.key === wanted.key) await open(source, first);
  else await open(source);
  await access;
}

start();
