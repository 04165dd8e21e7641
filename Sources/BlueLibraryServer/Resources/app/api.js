// The HTTP side of the app: relative URLs only (so it works under a proxy's path prefix),
// the bearer token (sessionStorage only), and RFC 9457 problems turned into errors.

const TOKEN_KEY = 'bluelibrary.token';

/** A failed request: the problem document's detail, its field errors, and Retry-After. */
export class Problem extends Error {
  constructor(status, body, headers) {
    super(body?.detail || body?.title || `The server answered ${status}.`);
    this.status = status;
    this.title = body?.title || '';
    this.type = body?.type || '';
    this.errors = Array.isArray(body?.errors) ? body.errors : [];
    const retry = headers?.get?.('Retry-After');
    this.retryAfter = retry && /^\d+$/.test(retry) ? Number(retry) : null;
  }

  static async from(response) {
    let body = null;
    try { body = await response.json(); } catch { body = null; }
    return new Problem(response.status, body, response.headers);
  }
}

/** Whether a failure is the network's (no answer at all). */
export const isNetworkError = (error) => error instanceof TypeError;

/** Percent-encodes one path segment. */
export const seg = (text) => encodeURIComponent(text);

/**
 * One client of the API. `askToken(problem)` shows the key prompt and resolves to the key
 * entered (kept in sessionStorage; the request is then sent again), or null when cancelled.
 * `onToken()` is called when a request succeeds with a key just entered (to ask what it may
 * do; not for a wrong key, which would count one more failed attempt against this address).
 */
export class Api {
  constructor({ askToken, onToken = () => {} }) {
    this.askToken = askToken;
    this.onToken = onToken;
    this.prompt = null;
  }

  /**
   * The URL of an API path: the app lives at `<root>/app/`, the API at `<root>/`, so `../`
   * reaches it from the page under any path prefix a proxy adds.
   */
  url(path) { return `../${path}`; }

  get token() { return sessionStorage.getItem(TOKEN_KEY); }
  set token(value) {
    if (value) sessionStorage.setItem(TOKEN_KEY, value); else sessionStorage.removeItem(TOKEN_KEY);
  }

  headers(extra = {}) {
    const headers = { Accept: 'application/json', ...extra };
    const token = this.token;
    if (token) headers.Authorization = `Bearer ${token}`;
    return headers;
  }

  /** One token prompt at a time, shared by every request that got a 401 meanwhile. */
  async reauthorize(problem) {
    if (!this.prompt) {
      this.prompt = Promise.resolve(this.askToken(problem)).then((token) => {
        if (token) this.token = token;
        return Boolean(token);
      }).finally(() => { this.prompt = null; });
    }
    return this.prompt;
  }

  /**
   * Sends a request; resolves to `{status, data, etag}` (status 304 has no data), rejects with
   * a Problem (or a TypeError when the network failed). A 401 shows the token prompt and
   * sends the request again with the token, unless `prompt` is false. `etag` is sent as
   * `If-None-Match`, `ifMatch` as `If-Match` (a change made meanwhile is then a 412).
   */
  async request(method, url, { body, etag, ifMatch, contentType = 'application/json', signal, prompt = true } = {}) {
    let reauthorized = false;
    for (;;) {
      const extra = {};
      if (body !== undefined) extra['Content-Type'] = contentType;
      if (etag) extra['If-None-Match'] = etag;
      if (ifMatch) extra['If-Match'] = ifMatch;
      const response = await fetch(this.url(url), {
        method, headers: this.headers(extra), cache: 'no-store', signal,
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      if (response.status === 401) {
        const problem = await Problem.from(response);
        if (prompt && await this.reauthorize(problem)) {
          reauthorized = true;
          continue;
        }
        throw problem;
      }
      if (reauthorized && response.status !== 429) this.onToken();
      if (response.status === 304) return { status: 304, data: null, etag };
      if (!response.ok) throw await Problem.from(response);
      const data = response.status === 204 ? null : await response.json();
      return { status: response.status, data, etag: response.headers.get('ETag') };
    }
  }

  get(url, options) { return this.request('GET', url, options); }
  post(url, body) { return this.request('POST', url, { body }); }
  put(url, body, options = {}) { return this.request('PUT', url, { body, ...options }); }
  /** A JSON merge patch, sent only if the resource still has the ETag `ifMatch`. */
  patch(url, body, ifMatch) { return this.request('PATCH', url, { body, ifMatch, contentType: 'application/merge-patch+json' }); }
  delete(url) { return this.request('DELETE', url); }
}
