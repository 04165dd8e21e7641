// The Libraries and views dialog (admin keys, or a server without the lock): create, rename and
// delete libraries with POST /libraries, PATCH /libraries/{lib} and DELETE /libraries/{lib}. A
// 409 on delete (albums in it, views over it) is explained, with a confirm for `?force=true`.
// Views over libraries: POST /views, PATCH /views/{view} (its name, its libraries in the order
// the user gives them with Up and Down, and its filter), DELETE.

import { Problem, seg } from './api.js';

const $ = (id) => document.getElementById(id);

/** A view's filter fields: the member of the API's `filter`, its label, a placeholder. */
const VIEW_FILTER = [
  ['q', 'Text', 'words in title, artist or genre'],
  ['artist', 'Artist', 'exactly'],
  ['genre', 'Genre', 'exactly'],
  ['yearFrom', 'Year from', ''],
  ['yearTo', 'Year to', ''],
];

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
      $('view-sources').replaceChildren($('view-sources').querySelector('legend'), ...this.boxes(ticked, ticked));
      this.orderChanged($('view-sources'));
    } catch (error) {
      this.say(`The libraries could not be listed: ${error.message}`);
    }
  }

  /**
   * A checkbox per library, `first` (a view's libraries, in its order) before the others, each
   * with Up and Down buttons ("Move Jazz up in Both") that change the order: a view lists its
   * libraries' albums in the order of the boxes ticked. `owner` names the view.
   */
  boxes(first, ticked = first, owner = 'the new view') {
    const ids = [...first, ...this.libraries.map((library) => library.id).filter((id) => !first.includes(id))];
    return ids.map((id) => {
      const row = Object.assign(document.createElement('div'), { className: 'source-row' });
      const name = this.libraries.find((library) => library.id === id)?.name || id;
      const label = document.createElement('label');
      const box = Object.assign(document.createElement('input'), { type: 'checkbox', name: 'source', value: id, checked: ticked.includes(id) });
      label.append(box, ` ${name}`);
      const move = (text, step) => {
        const button = Object.assign(document.createElement('button'), { type: 'button', textContent: text, className: 'move' });
        button.setAttribute('aria-label', `Move ${name} ${text.toLowerCase()} in ${owner}`);
        button.dataset.step = String(step);
        button.addEventListener('click', () => this.move(row, step, name, owner));
        return button;
      };
      row.append(label, move('Up', -1), move('Down', 1));
      return row;
    });
  }

  /** Up or Down (`step` -1 or 1): the library's row one place earlier or later; the focus stays on it. */
  move(row, step, name, owner) {
    const fieldset = row.parentElement;
    const rows = [...fieldset.querySelectorAll('.source-row')];
    const to = rows.indexOf(row) + step;
    if (to < 0 || to >= rows.length) return;
    fieldset.insertBefore(row, step < 0 ? rows[to] : rows[to].nextSibling);
    this.orderChanged(fieldset);
    // Moving took the focus with the row out of the document: it comes back to the same button,
    // or (at an end, where it is disabled) to the other one.
    const same = row.querySelector(`[data-step="${step}"]`);
    (same.disabled ? row.querySelector(`[data-step="${-step}"]`) : same).focus();
    $('views-status').textContent = `${name} moved ${step < 0 ? 'up' : 'down'}: ${to + 1} of ${rows.length} in ${owner}.`;
  }

  /** The first row's Up and the last row's Down are disabled. */
  orderChanged(fieldset) {
    const rows = [...fieldset.querySelectorAll('.source-row')];
    rows.forEach((row, i) => {
      row.querySelector('[data-step="-1"]').disabled = i === 0;
      row.querySelector('[data-step="1"]').disabled = i === rows.length - 1;
    });
  }

  /** The ids of the libraries ticked in `fieldset`, in its order. */
  ticked(fieldset) { return [...fieldset.querySelectorAll('input:checked')].map((box) => box.value); }

  /**
   * One view: its name in a field, its libraries as checkboxes in its order (Up and Down move
   * them), its filter (the list filters of the API's view definition), Save and Delete.
   */
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
    fieldset.dataset.field = 'sources';
    fieldset.setAttribute('aria-describedby', `view-${view.id}-sources-error`);
    const legend = Object.assign(document.createElement('legend'), { textContent: `Libraries of ${name}` });
    fieldset.append(legend, ...this.boxes(view.sources, view.sources, name));
    this.orderChanged(fieldset);
    const save = Object.assign(document.createElement('button'), { type: 'submit', textContent: 'Save' });
    save.setAttribute('aria-label', `Save view ${name}`);
    const remove = Object.assign(document.createElement('button'), { type: 'button', textContent: 'Delete', className: 'danger' });
    remove.setAttribute('aria-label', `Delete view ${name}`);
    remove.addEventListener('click', () => this.changeView(view, 'DELETE'));
    const info = Object.assign(document.createElement('span'), { className: 'hint', textContent: view.id });
    const filter = this.filterFields(view, name);
    form.append(label, ' ', save, ' ', remove, ' ', info, fieldset, this.errorFor(view, 'sources'), filter);
    input.setAttribute('aria-describedby', this.errorFor(view, 'name', form).id);
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      const patch = {};
      if (input.value.trim() && input.value.trim() !== name) patch.name = input.value.trim();
      const sources = this.ticked(fieldset);
      if (sources.join() !== view.sources.join()) patch.sources = sources;
      const wanted = this.filterOf(filter);
      if (JSON.stringify(wanted ?? {}) !== JSON.stringify(this.filterOf(null, view.filter) ?? {})) patch.filter = wanted;
      this.changeView(view, 'PATCH', patch, form);
    });
    entry.append(form);
    return entry;
  }

  /**
   * The error line beside a view's field `name` (`view-<id>-<name>-error`), made when first
   * asked for; `form` puts it after the name field's label.
   */
  errorFor(view, name, form = null) {
    const id = `view-${view.id}-${name}-error`;
    const existing = form?.querySelector(`#${CSS.escape(id)}`);
    if (existing) return existing;
    const message = Object.assign(document.createElement('p'), { className: 'field-error', id, hidden: true });
    if (form) form.querySelector('label').after(message);
    return message;
  }

  /** The filter's fields of a view (q, artist, genre, yearFrom, yearTo), filled with its filter. */
  filterFields(view, name) {
    const fieldset = Object.assign(document.createElement('fieldset'), { className: 'view-filter' });
    fieldset.append(Object.assign(document.createElement('legend'), { textContent: `Filter of ${name}` }));
    const current = view.filter || {};
    for (const [key, text, hint] of VIEW_FILTER) {
      const label = Object.assign(document.createElement('label'), { textContent: text });
      const field = Object.assign(document.createElement('input'), { name: `filter.${key}`, value: current[key] ?? '', autocomplete: 'off' });
      if (key.startsWith('year')) field.inputMode = 'numeric';
      if (hint) field.placeholder = hint;
      const message = this.errorFor(view, `filter-${key}`);
      field.setAttribute('aria-describedby', message.id);
      label.append(field);
      fieldset.append(label, message);
    }
    fieldset.append(Object.assign(document.createElement('p'), {
      className: 'hint', textContent: 'Only the albums that match every field given are in the view; empty fields filter nothing.',
    }));
    return fieldset;
  }

  /**
   * The filter the fields ask for (`fieldset`), or of a view's `filter` as the server gave it:
   * only the fields given, years as numbers (a year that is not one is sent as typed, for the
   * server to name); null when none is.
   */
  filterOf(fieldset, given = null) {
    const filter = {};
    for (const [key] of VIEW_FILTER) {
      const value = fieldset ? fieldset.querySelector(`[name="filter.${key}"]`).value.trim() : String(given?.[key] ?? '');
      if (!value) continue;
      filter[key] = key.startsWith('year') && /^\d+$/.test(value) ? Number(value) : value;
    }
    return Object.keys(filter).length ? filter : null;
  }

  /**
   * Saves (`PATCH` with `patch`) or deletes a view; the switcher is read again. The API takes
   * no `If-Match` on a view: the server applies the members sent to the view as it is then. The
   * app sends only those that changed, and the answer's `revision` says whether someone else
   * changed the view since the dialog read it (their changes to the other members then stay).
   * A 422's errors appear beside the fields they name, the first focused.
   */
  async changeView(view, method, patch, form = null) {
    this.say('');
    const name = view.name || view.id;
    if (form) this.clearViewErrors(form);
    if (patch && !Object.keys(patch).length) return this.say(`Nothing to save for “${name}”.`, 'info');
    try {
      const { data } = await this.api.request(method, `views/${seg(view.id)}`, { body: patch });
      await this.refresh();
      const meanwhile = patch && data && data.revision > view.revision + 1
        ? ' It had been changed elsewhere since this dialog read it: what you did not change is as they left it.' : '';
      this.say(patch ? `Saved view “${data?.name || patch.name || name}”.${meanwhile}` : `Deleted view “${name}”.`, 'info');
      this.onChange(null, view.id);
      (this.views.querySelector(`[data-view="${CSS.escape(view.id)}"] input`) || this.viewCreate.elements.id).focus();
    } catch (error) {
      if (form && error instanceof Problem && error.status === 422 && this.showViewErrors(form, view, error)) return;
      this.say(`${patch ? 'Saving' : 'Deleting'} view “${name}” failed: ${error.message}${error.errors?.length ? ` (${error.errors.map((e) => e.message).join(' ')})` : ''}`);
    }
  }

  /** Hides a view form's field errors. */
  clearViewErrors(form) {
    for (const field of form.querySelectorAll('[aria-invalid]')) field.removeAttribute('aria-invalid');
    for (const message of form.querySelectorAll('.field-error')) { message.hidden = true; message.textContent = ''; }
  }

  /**
   * A 422 on a view: each error beside the field it names (`name`, `sources[1]`,
   * `filter.yearFrom`), the first focused, the others (if any) in the dialog's note. False when
   * none could be placed.
   */
  showViewErrors(form, view, error) {
    let first = null;
    const rest = [];
    for (const entry of error.errors) {
      const path = entry.field || '';
      const key = path.startsWith('filter.') ? path.slice(7).split(/[[.]/)[0] : path.split(/[[.]/)[0];
      const field = path.startsWith('filter.') ? form.querySelector(`[name="filter.${CSS.escape(key)}"]`)
        : key === 'name' ? form.elements.name : key === 'sources' ? form.querySelector('[data-field=sources]') : null;
      if (!field) { rest.push(entry.message); continue; }
      field.setAttribute('aria-invalid', 'true');
      const message = form.querySelector(`#${CSS.escape(`view-${view.id}-${path.startsWith('filter.') ? `filter-${key}` : key}-error`)}`);
      message.textContent = entry.message;
      message.hidden = false;
      first ??= field.matches('fieldset') ? field.querySelector('input') : field;
    }
    if (!first) return false;
    if (rest.length) this.say(`Saving view “${view.name || view.id}” failed: ${rest.join(' ')}`);
    first.focus();
    return true;
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
