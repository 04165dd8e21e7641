// The Libraries and views dialog (admin keys, or a server without the lock): create, rename and
// delete libraries with POST /libraries, PATCH /libraries/{lib} and DELETE /libraries/{lib}. A
// 409 on delete (albums in it, views over it) is explained, with a confirm for `?force=true`.
// Views over libraries: POST /views, PATCH /views/{view} (its name and libraries), DELETE.

import { Problem, seg } from './api.js';

const $ = (id) => document.getElementById(id);

export class LibraryManager {
  /**
   * @param api the app's Api
   * @param onChange called after a change (with the id of a library deleted, if any, and of a
   *   view changed), to read the switcher's libraries and views again
   */
  constructor(api, { onChange }) {
    this.api = api;
    this.onChange = onChange;
    this.dialog = $('libraries-dialog');
    this.list = $('libraries-list');
    this.note = $('libraries-note');
    this.confirm = $('libraries-confirm');
    this.create = $('library-create');
    this.views = $('views-list');
    this.viewCreate = $('view-create');
    this.libraries = [];
    this.pending = null;
    this.create.addEventListener('submit', (event) => { event.preventDefault(); this.submitCreate(); });
    this.viewCreate.addEventListener('submit', (event) => { event.preventDefault(); this.submitView(); });
    $('libraries-close').addEventListener('click', () => this.dialog.close());
    $('libraries-keep').addEventListener('click', () => this.cancelForce());
    $('libraries-force').addEventListener('click', () => this.force());
  }

  /** Opens the dialog with the libraries read afresh; `returnFocus` gets the focus back on close. */
  async open(returnFocus) {
    this.say('');
    this.hideConfirm();
    this.clearFieldErrors(this.create, 'library', ['id', 'name']);
    this.clearFieldErrors(this.viewCreate, 'view', ['id', 'name', 'sources']);
    this.create.reset();
    this.viewCreate.reset();
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
      const [libraries, views] = await Promise.all([this.api.get('libraries'), this.api.get('views')]);
      this.libraries = libraries.data.libraries;
      this.list.replaceChildren(...this.libraries.map((library) => this.row(library)));
      this.views.replaceChildren(...views.data.views.map((view) => this.viewRow(view)));
      // The new view's libraries: those ticked stay ticked.
      const ticked = this.ticked($('view-sources'));
      $('view-sources').replaceChildren($('view-sources').querySelector('legend'), ...this.boxes([], ticked));
    } catch (error) {
      this.say(`The libraries could not be listed: ${error.message}`);
    }
  }

  /** A checkbox per library, `first` (a view's libraries, in its order) before the others. */
  boxes(first, ticked = first) {
    const ids = [...first, ...this.libraries.map((library) => library.id).filter((id) => !first.includes(id))];
    return ids.map((id) => {
      const label = document.createElement('label');
      const box = Object.assign(document.createElement('input'), { type: 'checkbox', name: 'source', value: id, checked: ticked.includes(id) });
      label.append(box, ` ${this.libraries.find((library) => library.id === id)?.name || id}`);
      return label;
    });
  }

  /** The ids of the libraries ticked in `fieldset`, in its order. */
  ticked(fieldset) { return [...fieldset.querySelectorAll('input:checked')].map((box) => box.value); }

  /** One view: its name in a field, its libraries as checkboxes, Save and Delete. */
  viewRow(view) {
    const entry = document.createElement('li');
    entry.dataset.view = view.id;
    const form = document.createElement('form');
    form.noValidate = true;
    const name = view.name || view.id;
    const input = Object.assign(document.createElement('input'), { name: 'name', value: name, autocomplete: 'off' });
    input.setAttribute('aria-label', `Name of view ${view.id}`);
    const label = document.createElement('label');
    label.append(input);
    const fieldset = document.createElement('fieldset');
    const legend = Object.assign(document.createElement('legend'), { textContent: `Libraries of ${name}` });
    fieldset.append(legend, ...this.boxes(view.sources));
    const save = Object.assign(document.createElement('button'), { type: 'submit', textContent: 'Save' });
    save.setAttribute('aria-label', `Save view ${name}`);
    const remove = Object.assign(document.createElement('button'), { type: 'button', textContent: 'Delete', className: 'danger' });
    remove.setAttribute('aria-label', `Delete view ${name}`);
    remove.addEventListener('click', () => this.changeView(view, 'DELETE'));
    const info = Object.assign(document.createElement('span'), { className: 'hint', textContent: `${view.id}${Object.keys(view.filter || {}).length ? ' · filtered' : ''}` });
    form.append(label, ' ', save, ' ', remove, ' ', info, fieldset);
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      const patch = {};
      if (input.value.trim() && input.value.trim() !== name) patch.name = input.value.trim();
      const sources = this.ticked(fieldset);
      if (sources.join() !== view.sources.join()) patch.sources = sources;
      this.changeView(view, 'PATCH', patch);
    });
    entry.append(form);
    return entry;
  }

  /** Saves (`PATCH` with `patch`) or deletes a view; the switcher is read again. */
  async changeView(view, method, patch) {
    this.say('');
    const name = view.name || view.id;
    if (patch && !Object.keys(patch).length) return this.say(`Nothing to save for “${name}”.`, 'info');
    try {
      await this.api.request(method, `views/${seg(view.id)}`, { body: patch });
      await this.refresh();
      this.say(patch ? `Saved view “${patch.name || name}”.` : `Deleted view “${name}”.`, 'info');
      this.onChange(null, view.id);
      (this.views.querySelector(`[data-view="${CSS.escape(view.id)}"] input`) || this.viewCreate.elements.id).focus();
    } catch (error) {
      this.say(`${patch ? 'Saving' : 'Deleting'} view “${name}” failed: ${error.message}${error.errors?.length ? ` (${error.errors.map((e) => e.message).join(' ')})` : ''}`);
    }
  }

  async submitView() {
    const form = this.viewCreate;
    this.clearFieldErrors(form, 'view', ['id', 'name', 'sources']);
    this.say('');
    const id = form.elements.id.value.trim();
    const body = { id, name: form.elements.name.value.trim() || id, sources: this.ticked($('view-sources')) };
    try {
      const { data } = await this.api.post('views', body);
      form.reset();
      await this.refresh();
      this.say(`Created view “${data.name}”: it is in the Library switcher.`, 'info');
      this.onChange(null, data.id);
      form.elements.id.focus();
    } catch (error) {
      this.fieldErrors(form, 'view', ['id', 'name', 'sources'], error, 'Creating the view');
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

  /** Hides the errors beside the fields `names` of `form` (messages `${prefix}-${name}-error`). */
  clearFieldErrors(form, prefix, names) {
    for (const name of names) {
      form.querySelector(`[name=${name}], #${prefix}-${name}`)?.removeAttribute('aria-invalid');
      const message = $(`${prefix}-${name}-error`);
      message.hidden = true;
      message.textContent = '';
    }
  }

  /** A refusal: each error beside its field (`sources[1]` is `sources`), the rest in the dialog's note. */
  fieldErrors(form, prefix, names, error, doing) {
    if (!(error instanceof Problem)) return this.say(`${doing} failed: the server could not be reached.`);
    let first = null;
    const rest = [];
    for (const entry of error.errors) {
      const name = names.find((n) => (entry.field || '').split(/[[.]/)[0] === n);
      if (!name) { rest.push(entry.message); continue; }
      const field = form.querySelector(`[name=${name}], #${prefix}-${name}`);
      field.setAttribute('aria-invalid', 'true');
      const message = $(`${prefix}-${name}-error`);
      message.textContent = entry.message;
      message.hidden = false;
      first ??= field.matches('fieldset') ? field.querySelector('input') || field : field;
    }
    if (!first || rest.length) this.say(`${doing} failed: ${rest.length ? rest.join(' ') : error.message}`);
    (first || form.elements.id).focus();
  }

  async submitCreate() {
    const form = this.create;
    this.clearFieldErrors(form, 'library', ['id', 'name']);
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
      this.fieldErrors(form, 'library', ['id', 'name'], error, 'Creating the library');
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
