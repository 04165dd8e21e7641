// The first page, asked for before the rest of the app is loaded: index.html runs this module
// (and the two it imports) before main.js, whose larger graph is still being fetched and
// compiled meanwhile. It makes the app's one Api and the AlbumList of the source shown last,
// and starts its first page; main.js shows that list as soon as it is wired up.

import { Api } from './api.js';
import { AlbumList, Source } from './model.js';

let hooked;
const hooks = new Promise((resolve) => { hooked = resolve; });

/**
 * The app's client of the API. Its key prompt and its "a key just worked" call are main.js's,
 * given with `connect` (a 401 answered before then waits for them).
 */
export const api = new Api({
  askToken: async (problem) => (await hooks).askToken(problem),
  onToken: () => { hooks.then((h) => h.onToken()); },
});

/** main.js's `{askToken, onToken}`. */
export function connect(handlers) { hooked(handlers); }

// For scripts/bench-app --timeline: when this module ran (the first page is asked for now).
performance.mark('first.js runs');
/** The source shown last in this browser (it may be gone: main.js then opens another). */
const source = Source.parse(localStorage.getItem('bluelibrary.source'));
const list = new AlbumList(api, source);

/** `{list, loading}`: the list and its first page's promise. */
export const first = { list, loading: list.load() };
