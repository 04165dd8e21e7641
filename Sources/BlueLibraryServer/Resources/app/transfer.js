// The Import and export dialog: a CSV file's albums added to the library shown (POST
// albums/import, write) or the library replaced by an archive (PUT archive, admin); the list
// shown exported as CSV (a library's or a view's, `?format=csv`) or a library as an archive
// (GET archive). Uploads go by XMLHttpRequest (its upload progress events), downloads by a
// streamed fetch (read chunk by chunk, rows counted against the album count); both show a
// progress bar (`aria-valuenow`, the percentage) and can be cancelled.

import { Problem } from './api.js';
import { libraryPrefix } from './model.js';

const $ = (id) => document.getElementById(id);

const size = (bytes) => (bytes < 1e3 ? `${bytes} B` : bytes < 1e6 ? `${(bytes / 1e3).toFixed(1)} kB` : `${(bytes / 1e6).toFixed(1)} MB`);
const plural = (n) => `${n.toLocaleString('en')} album${n === 1 ? '' : 's'}`;

export class Transfer {
  /**
   * @param api the app's Api
   * @param current () => {source, name, count}: the library or view shown, its name and album count
   * @param done called with the answer and its summary after an import (the list is then read again)
   * @param mayWrite () => whether the key may change the library shown
   */
  constructor(api, { current, done, mayWrite }) {
    this.api = api;
    this.current = current;
    this.done = done;
    this.mayWrite = mayWrite;
    this.dialog = $('transfer-dialog');
    this.form = $('import-form');
    this.note = $('transfer-note');
    this.bar = $('transfer-progress');
    this.abort = null;
    this.form.addEventListener('submit', (event) => { event.preventDefault(); this.upload(); });
    this.form.elements.file.addEventListener('change', () => this.chosen());
    $('export-csv').addEventListener('click', () => this.download('csv'));
    $('export-archive').addEventListener('click', () => this.download('archive'));
    $('transfer-cancel').addEventListener('click', () => this.abort?.());
    $('transfer-close').addEventListener('click', () => this.dialog.close());
    this.dialog.addEventListener('close', () => this.abort?.());
  }

  open(returnFocus) {
    const { source, name } = this.current();
    this.say('');
    this.progress(null);
    this.form.reset();
    this.chosen();
    $('import-errors').replaceChildren();
    $('transfer-what').textContent = `${source.isView ? 'View' : 'Library'}: ${name}`;
    // A view: CSV out only (imports and archives are a library's).
    this.form.hidden = source.isView || !this.mayWrite();
    $('export-archive').hidden = source.isView;
    this.dialog.addEventListener('close', () => returnFocus?.focus(), { once: true });
    this.dialog.showModal();
    (this.form.hidden ? $('export-csv') : this.form.elements.file).focus();
  }

  /** The dialog's message line: '' hides it. */
  say(text, kind = 'error') {
    this.note.textContent = text;
    this.note.className = kind === 'error' ? 'form-error' : 'state';
    this.note.hidden = !text;
  }

  /** An archive (JSON) replaces the library: its confirmation is shown only for one. */
  chosen() {
    const file = this.form.elements.file.files[0];
    const archive = Boolean(file && this.isArchive(file));
    $('import-replace').hidden = !archive;
    if (!archive) this.form.elements.replace.checked = false;
  }

  isArchive(file) { return /\.json$/i.test(file.name) || file.type === 'application/json'; }

  /**
   * Shows the progress bar for `label` at `done` of `total` (bytes or rows; a percentage in
   * `aria-valuenow`), or hides it (`label` null). Without a total it is indeterminate.
   */
  progress(label, done = 0, total = 0, text = '') {
    $('transfer-status').hidden = label === null;
    this.busy(label !== null);
    if (label === null) return;
    $('transfer-label').textContent = label;
    const percent = total ? Math.min(100, Math.round((done / total) * 100)) : null;
    if (percent === null) {
      this.bar.removeAttribute('value');
      this.bar.removeAttribute('aria-valuenow');
    } else {
      this.bar.value = percent;
      this.bar.setAttribute('aria-valuenow', String(percent));
    }
    this.bar.setAttribute('aria-valuetext', `${percent === null ? '' : `${percent} % · `}${text}`);
    $('transfer-bytes').textContent = text;
  }

  busy(on) {
    for (const button of [$('export-csv'), $('export-archive'), this.form.querySelector('[type=submit]')]) button.disabled = on;
    $('transfer-cancel').hidden = !on;
  }

  /** Sends the file chosen: a CSV to albums/import, an archive (confirmed) to archive. */
  async upload() {
    const file = this.form.elements.file.files[0];
    const { source, name } = this.current();
    $('import-errors').replaceChildren();
    this.say('');
    if (!file) { this.say('Choose a CSV file or an archive first.'); this.form.elements.file.focus(); return; }
    const archive = this.isArchive(file);
    if (archive && !this.form.elements.replace.checked) {
      this.say(`An archive replaces every album of “${name}”: tick the box to confirm.`);
      this.form.elements.replace.focus();
      return;
    }
    const prefix = libraryPrefix(source.id);
    const [method, path, type] = archive ? ['PUT', `${prefix}archive`, 'application/json'] : ['POST', `${prefix}albums/import`, 'text/csv'];
    const label = `Uploading ${file.name}`;
    try {
      const answer = await this.xhr(method, path, file, type, (sent, total) =>
        this.progress(sent < total ? label : `Importing ${file.name}…`, sent, total, `${size(sent)} of ${size(total)}`));
      this.progress(null);
      const text = archive
        ? `Replaced “${name}” with ${file.name}: ${plural(answer.albumCount)}.`
        : answer.imported
          ? `Imported ${plural(answer.imported)} from ${file.name} at the end of “${name}”. Undo takes them all back.`
          : `${file.name} has no albums: nothing was imported.`;
      this.say(text, 'info');
      this.form.reset();
      this.chosen();
      this.done(answer, text);
    } catch (error) {
      this.progress(null);
      this.failed(error, `Importing ${file.name}`);
      this.form.elements.file.focus();
    }
  }

  /** A refusal: the server's reason, and for a bad CSV or archive its problems (up to 100) listed. */
  failed(error, doing) {
    if (error === 'aborted') return this.say(`${doing} was cancelled: nothing was changed.`, 'info');
    if (!(error instanceof Problem)) return this.say(`${doing} failed: the server could not be reached.`);
    const more = error.status === 429 ? ` Try again in ${error.retryAfter ?? 60} s.` : '';
    this.say(`${doing} failed: ${error.message}${more}`);
    $('import-errors').replaceChildren(...error.errors.slice(0, 20).map((entry) =>
      Object.assign(document.createElement('li'), { textContent: entry.field && !entry.message.startsWith(entry.field) ? `${entry.field}: ${entry.message}` : entry.message })));
  }

  /**
   * One upload by XMLHttpRequest (fetch cannot tell upload progress): resolves to the JSON
   * answer, rejects with a Problem, a TypeError (network) or 'aborted'. A 401 asks for the key
   * and sends the file again.
   */
  xhr(method, path, body, type, onProgress) {
    return new Promise((resolve, reject) => {
      const request = new XMLHttpRequest();
      request.open(method, this.api.url(path));
      for (const [header, value] of Object.entries(this.api.headers({ 'Content-Type': type }))) request.setRequestHeader(header, value);
      request.responseType = 'json';
      request.upload.addEventListener('progress', (event) => onProgress(event.loaded, event.lengthComputable ? event.total : body.size));
      request.addEventListener('load', async () => {
        const headers = { get: (name) => request.getResponseHeader(name) };
        if (request.status === 401 && await this.api.reauthorize(new Problem(401, request.response, headers))) {
          return this.xhr(method, path, body, type, onProgress).then(resolve, reject);
        }
        if (request.status >= 200 && request.status < 300) resolve(request.response);
        else reject(new Problem(request.status, request.response, headers));
      });
      request.addEventListener('error', () => reject(new TypeError('network')));
      request.addEventListener('abort', () => reject('aborted'));
      this.abort = () => request.abort();
      onProgress(0, body.size);
      request.send(body);
    });
  }

  /**
   * Exports the list shown as CSV, or the library as an archive: a streamed fetch, read chunk
   * by chunk (the rows seen against the album count make the progress), saved as a file.
   */
  async download(kind) {
    const { source, name, count, filter } = this.current();
    const path = kind === 'csv' ? `${source.listPath}?format=csv${filter}` : `${libraryPrefix(source.id)}archive`;
    const what = kind === 'csv' ? 'CSV' : 'archive';
    $('import-errors').replaceChildren();
    this.say('');
    const controller = new AbortController();
    this.abort = () => controller.abort();
    // A row: a line of CSV (after its header), an album of the archive.
    const marker = kind === 'csv' ? /\n/g : /"createdAt":/g;
    try {
      this.progress(`Exporting “${name}” as ${what}`, 0, count, 'starting…');
      let response;
      for (let retried = false; ;) {
        response = await fetch(this.api.url(path), { headers: this.api.headers({ Accept: kind === 'csv' ? 'text/csv' : 'application/json' }), cache: 'no-store', signal: controller.signal });
        if (response.status !== 401 || retried) break;
        retried = true;
        if (!await this.api.reauthorize(await Problem.from(response))) break;
      }
      if (!response.ok) throw await Problem.from(response);
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      const chunks = [];
      let bytes = 0;
      let rows = kind === 'csv' ? -1 : 0;
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        chunks.push(value);
        bytes += value.length;
        rows += (decoder.decode(value, { stream: true }).match(marker) || []).length;
        this.progress(`Exporting “${name}” as ${what}`, Math.max(rows, 0), count, `${plural(Math.max(rows, 0))} · ${size(bytes)}`);
      }
      const file = /filename="([^"]+)"/.exec(response.headers.get('Content-Disposition') || '')?.[1]
        || `${source.id}.${kind === 'csv' ? 'csv' : 'json'}`;
      const url = URL.createObjectURL(new Blob(chunks, { type: response.headers.get('Content-Type') || '' }));
      const link = Object.assign(document.createElement('a'), { href: url, download: file });
      link.click();
      setTimeout(() => URL.revokeObjectURL(url), 60000);
      this.progress(null);
      this.say(`Exported “${name}” as ${file} (${size(bytes)}).`, 'info');
    } catch (error) {
      this.progress(null);
      this.failed(controller.signal.aborted ? 'aborted' : error, `Exporting “${name}”`);
    }
  }
}
