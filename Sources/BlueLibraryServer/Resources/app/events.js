// Server-Sent Events over fetch (EventSource cannot send the bearer token): parses the
// stream, remembers the last id, and reconnects with Last-Event-ID after a disconnect.

import { Problem } from './api.js';

/** A stream silent this long (three missed 15-s heartbeats) is given up and resumed. */
const SILENCE_MS = 45000;

export class EventStream {
  /**
   * @param api the Api (its headers carry the token)
   * @param path the relative events URL
   * @param onEvent (type, data, id) for every event, one at a time: the next is handed over
   *   only when the promise the previous one returned has settled
   * @param onStatus ('live' | 'reconnecting' | 'stopped', detail)
   */
  constructor(api, path, onEvent, onStatus) {
    this.api = api;
    this.path = path;
    this.onEvent = onEvent;
    this.onStatus = onStatus;
    this.lastEventId = null;
    this.controller = null;
    this.stopped = false;
    this.delay = 500;
    /** The events handed over so far, in order (a promise queue). */
    this.chain = Promise.resolve();
  }

  start() { this.connect(); }

  stop() {
    this.stopped = true;
    this.controller?.abort();
  }

  async connect(reauthorized = false) {
    if (this.stopped) return;
    this.controller = new AbortController();
    const headers = this.api.headers({ Accept: 'text/event-stream' });
    if (this.lastEventId !== null) headers['Last-Event-ID'] = this.lastEventId;
    try {
      const response = await fetch(this.api.url(this.path), { headers, cache: 'no-store', signal: this.controller.signal });
      if (response.status === 401) {
        if (!(await this.api.reauthorize(await Problem.from(response)))) {
          this.onStatus('stopped', 'Live updates need the token.');
          return;
        }
        return this.connect(true);
      }
      // A key just entered worked: the app asks what it may do.
      if (reauthorized && response.status !== 429) this.api.onToken();
      if (response.status === 429) {
        // Locked out for too many wrong tokens: reconnecting sooner would only be refused.
        const problem = await Problem.from(response);
        const seconds = problem.retryAfter ?? 60;
        const at = new Date(Date.now() + seconds * 1000).toLocaleTimeString();
        this.onStatus('reconnecting', `Live updates refused: too many attempts. Trying again in ${seconds} s (at ${at}).`);
        setTimeout(() => this.connect(), seconds * 1000);
        return;
      }
      if (!response.ok || !response.body) throw new Error(`events answered ${response.status}`);
      this.onStatus('live', '');
      this.delay = 500;
      await this.read(response.body);
    } catch (error) {
      if (this.stopped) return;
    }
    if (this.stopped) return;
    this.onStatus('reconnecting', `Live updates paused; reconnecting in ${Math.round(this.delay / 1000) || 1} s.`);
    setTimeout(() => this.connect(), this.delay);
    this.delay = Math.min(this.delay * 2, 15000);
  }

  async read(body) {
    const reader = body.pipeThrough(new TextDecoderStream()).getReader();
    // The server sends a heartbeat every 15 s: a stream silent for 45 s is dead (a proxy or
    // the network dropped it without closing), so it is given up and resumed.
    let heard = Date.now();
    const watchdog = setInterval(() => { if (Date.now() - heard > SILENCE_MS) this.controller?.abort(); }, 5000);
    try {
      await this.readLines(reader, () => { heard = Date.now(); });
    } finally {
      clearInterval(watchdog);
    }
  }

  async readLines(reader, onData) {
    let buffer = '';
    let event = { type: 'message', data: [], id: null };
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      onData();
      buffer += value;
      let newline;
      while ((newline = buffer.search(/\r\n|\r|\n/)) >= 0) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + (buffer.startsWith('\r\n', newline) ? 2 : 1));
        if (line === '') {
          if (event.id !== null) this.lastEventId = event.id;
          if (event.data.length) this.dispatch(event);
          event = { type: 'message', data: [], id: null };
          continue;
        }
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        let text = colon < 0 ? '' : line.slice(colon + 1);
        if (text.startsWith(' ')) text = text.slice(1);
        if (field === 'event') event.type = text;
        else if (field === 'data') event.data.push(text);
        else if (field === 'id') event.id = text;
      }
    }
  }

  dispatch(event) {
    let data = {};
    try { data = JSON.parse(event.data.join('\n')); } catch { data = {}; }
    // In order: an event is handled only after the previous one finished (its GETs answered),
    // so a slow answer for an earlier event cannot land after a later event's change.
    this.chain = this.chain.then(() => (this.stopped ? undefined : this.onEvent(event.type, data, event.id)))
      .catch((error) => console.warn('An event could not be handled:', error));
  }
}
