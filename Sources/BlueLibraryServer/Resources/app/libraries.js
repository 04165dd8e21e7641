// The Libraries dialog (admin keys, or a server without the lock): create, rename and delete
// libraries with POST /libraries, PATCH /libraries/{lib} and DELETE /libraries/{lib}. A 409 on
// delete (albums in it, views over it) is explained, with a confirm for `?force=true`.

import { Problem, seg } from './api.js';

const $ = (id) => document.getElementById(id);

export class LibraryManager {
  /**
   * @param api the app's Api
   * @param onChange called after a change (with the id of a library deleted, if any), to
   *   read the switcher's libraries again
   */
  constructor(api, { onChange }) {
    this.api = api;
    this.onChange = onChange;
    this.dialog = $('libraries-dialog');
    this.list = $('libraries-list');
    this.note = $('libraries-note');
    this.confirm = $('libraries-confirm');
    this.create = $('library-create');
    this.pending = null;
    this.create.addEventListener('submit', (event) => { event.preventDefault(); this.submitCreate(); });
    $('libraries-close').addEventListener('click', () => this.dialog.close());
    $('libraries-keep').addEventListener('click', () => this.cancelForce());
    $('libraries-force').addEventListener('click', () => this.force());
  }

  /** Opens the dialog with the libraries read afresh; `returnFocus` gets the focus back on close. */
  async open(returnFocus) {
    this.say('');
    this.hideConfirm();
    this.clearFieldErrors();
    this.create.reset();
    this.dialog.addEventListener('close', () => returnFocus?.focus(), { once: true });
    this.dialog.showModal();
    await this.refresh();
    this.create.elements.id.focus();
  }

  /** The dialog's message line (an alert): '' hides it. */
  say(text, kind = 'error') {
    this.note.textContent = text;
    this.note.className = kind === 'error' ? 'form-error' : 'state';
    this.note.hidden = !text;
  }

  async refresh() {
    try {
      const { data } = await this.api.get('libraries');
      this.list.replaceChildren(...data.libraries.map((library) => this.row(library)));
    } catch (error) {
      this.say(`The libraries could not be listed: ${error.message}`);
    }
  }

  /** One library: its name in a field with Rename beside it, its id and album count, Delete. */
  row(library) {
    const entry = document.createElement('li');
    entry.dataset.id = library.id;
    const form = document.createElement('form');
    form.noValidate = true;
    const label = document.createElement('label');
    const input = Object.assign(document.createElement('input'), { name: 'name', value: library.name, autocomplete: 'off' });
    input.setAttribute('aria-label', `Name of ${library.id}`);
    const info = Object.assign(document.createElement('span'), {
      className: 'hint', textContent: `${library.id} · ${library.albumCount} album${library.albumCount === 1 ? '' : 's'}`,
    });
    info.id = `library-info-${library.id}`;
    input.setAttribute('aria-describedby', info.id);
    label.append(input);
    const rename = Object.assign(document.createElement('button'), { type: 'submit', textContent: 'Rename' });
    rename.setAttribute('aria-label', `Rename ${library.name}`);
    form.append(label, ' ', rename, ' ', info);
    form.addEventListener('submit', (event) => { event.preventDefault(); this.rename(library, input); });
    entry.append(form);
    if (library.id !== 'default') {
      const remove = Object.assign(document.createElement('button'), { type: 'button', textContent: 'Delete', className: 'danger' });
      remove.setAttribute('aria-label', `Delete ${library.name}`);
      remove.addEventListener('click', () => this.remove(library));
      entry.append(remove);
    }
    return entry;
  }

  clearFieldErrors() {
    for (const name of ['id', 'name']) {
      this.create.elements[name].removeAttribute('aria-invalid');
      const message = $(`library-${name}-error`);
      message.hidden = true;
      message.textContent = '';
    }
  }

  async submitCreate() {
    const form = this.create;
    this.clearFieldErrors();
    this.say('');
    const body = { id: form.elements.id.value.trim(), name: form.elements.name.value.trim() || form.elements.id.value.trim() };
    try {
      const { data } = await this.api.post('libraries', body);
      form.reset();
      await this.refresh();
      this.say(`Created “${data.name}”.`, 'info');
      this.onChange(null);
      form.elements.id.focus();
    } catch (error) {
      if (!(error instanceof Problem)) return this.say(`Creating the library failed: the server could not be reached.`);
      let first = null;
      const rest = [];
      for (const entry of error.errors) {
        const name = ['id', 'name'].includes(entry.field) ? entry.field : null;
        if (!name) { rest.push(entry.message); continue; }
        form.elements[name].setAttribute('aria-invalid', 'true');
        const message = $(`library-${name}-error`);
        message.textContent = entry.message;
        message.hidden = false;
        first ??= form.elements[name];
      }
      if (!first || rest.length) this.say(`Creating the library failed: ${rest.length ? rest.join(' ') : error.message}`);
      (first || form.elements.id).focus();
    }
  }

  async rename(library, input) {
    const name = input.value.trim();
    this.say('');
    if (!name || name === library.name) { input.value = library.name; return; }
    try {
      const { data } = await this.api.patch(`libraries/${seg(library.id)}`, { name });
      await this.refresh();
      this.say(`Renamed “${library.name}” to “${data.name}”.`, 'info');
      this.onChange(null);
      this.list.querySelector(`[data-id="${CSS.escape(library.id)}"] input`)?.focus();
    } catch (error) {
      input.setAttribute('aria-invalid', 'true');
      this.say(`Renaming “${library.name}” failed: ${error.message}`);
      input.focus();
    }
  }

  async remove(library, { force = false } = {}) {
    this.say('');
    this.hideConfirm();
    try {
      await this.api.delete(`libraries/${seg(library.id)}${force ? '?force=true' : ''}`);
      await this.refresh();
      this.say(`Deleted “${library.name}”.`, 'info');
      this.onChange(library.id);
      this.create.elements.id.focus();
    } catch (error) {
      if (error.status === 409 && !force) return this.askForce(library, error);
      this.say(`Deleting “${library.name}” failed: ${error.message}`);
    }
  }

  /** The 409: why the server kept the library, and a confirm to delete it anyway. */
  askForce(library, problem) {
    this.pending = library;
    $('libraries-confirm-text').textContent = `“${library.name}” was not deleted: ${problem.message.replace(/\.?$/, '.')} ` +
      'Deleting it anyway also deletes its albums (and takes it out of the views over it); Undo cannot bring them back.';
    $('libraries-force').textContent = `Delete “${library.name}” anyway`;
    this.confirm.hidden = false;
    $('libraries-keep').focus();
  }

  hideConfirm() {
    this.pending = null;
    this.confirm.hidden = true;
  }

  cancelForce() {
    const library = this.pending;
    this.hideConfirm();
    this.list.querySelector(`[data-id="${CSS.escape(library?.id ?? '')}"] .danger`)?.focus();
  }

  force() {
    const library = this.pending;
    if (library) this.remove(library, { force: true });
  }
}
