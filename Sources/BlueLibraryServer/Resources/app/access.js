// What the key in this tab may do: `GET /keys/self` (scopes, libraries, whether the lock is
// on), the line in the header that says it, and the checks that hide the controls it may not
// use. Without a key the controls stay: a change then brings the key prompt (the server's 401).

/** The caller as `GET /keys/self` describes it; `null` until known (or on an older server). */
export class Access {
  constructor(self = null) {
    this.self = self;
  }

  /** Asks the server; an answer it cannot give (an older server, a network failure) is `null`. */
  static async load(api) {
    try {
      const { data } = await api.get('keys/self', { prompt: false });
      return new Access(data);
    } catch {
      return new Access(null);
    }
  }

  get key() { return this.self?.key || null; }
  get locked() { return Boolean(this.self?.locked); }

  /** Whether the caller has `scope` (`read`, `write`, `admin`) for every one of `libraries`. */
  allows(scope, libraries = []) {
    const self = this.self;
    // Unknown, or no key sent: show the control; the server asks for a key when it needs one.
    if (!self || !self.key) return true;
    if (!self.scopes.includes(scope)) return false;
    return !self.libraries || libraries.every((id) => self.libraries.includes(id));
  }

  /** Album changes, undo, saving the selection: `write` for these libraries. */
  mayWrite(libraries) { return this.allows('write', libraries); }

  /** Libraries, views, settings, keys: `admin` for every library. */
  mayAdminister() { return this.allows('admin') && !(this.key && this.self.libraries); }

  /** The header's line: which key, with which scopes and libraries. */
  describe() {
    const self = this.self;
    if (!self) return '';
    if (!self.locked) return 'Open server: no key needed';
    const libraries = self.libraries ? `libraries ${self.libraries.join(', ')}` : 'all libraries';
    if (!self.key) return self.scopes.length ? `No key: ${self.scopes.join(', ')} only` : 'No key';
    const name = self.key.name && self.key.name !== self.key.id ? ` (${self.key.name})` : '';
    return `Key ${self.key.id}${name}: ${self.scopes.join(', ') || 'nothing'} · ${libraries}`;
  }
}
