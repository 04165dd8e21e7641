// The album forms ("Add album" and the edit form): read the fields, and show a 422 problem's
// field errors next to the fields they name (each field's first `aria-describedby` element).

const FIELDS = ['title', 'artist', 'genre', 'year', 'coverUrl', 'index'];

const fieldsOf = (form) => FIELDS.filter((name) => form.elements[name]);
const messageOf = (input) => document.getElementById(input.getAttribute('aria-describedby').split(' ')[0]);
const number = (text) => (/^-?\d+$/.test(text) ? Number(text) : text);

/** The request body from the form: empty optional fields are left out. */
export function albumBody(form) {
  const value = (name) => form.elements[name].value.trim();
  const body = { title: value('title'), artist: value('artist') };
  if (value('genre')) body.genre = value('genre');
  if (value('coverUrl')) body.coverUrl = value('coverUrl');
  if (value('year')) body.year = number(value('year'));
  if (value('index')) body.index = number(value('index'));
  return body;
}

/** Fills the edit form with `album`'s fields. */
export function fillAlbum(form, album) {
  for (const name of fieldsOf(form)) form.elements[name].value = album[name] ?? '';
}

/**
 * The JSON merge patch from the edit form to `album`: only the fields that changed; an
 * emptied genre, year or cover URL is `null` (genre back to "Pop", year and cover cleared).
 */
export function albumPatch(form, album) {
  const patch = {};
  for (const name of ['title', 'artist', 'genre', 'year', 'coverUrl']) {
    const text = form.elements[name].value.trim();
    const before = album[name] ?? null;
    if (text === '') {
      if (name === 'title' || name === 'artist') patch[name] = text;
      else if (before !== null && !(name === 'genre' && before === 'Pop')) patch[name] = null;
      continue;
    }
    const value = name === 'year' ? number(text) : text;
    if (value !== before) patch[name] = value;
  }
  return patch;
}

export function clearErrors(form) {
  for (const name of fieldsOf(form)) {
    const input = form.elements[name];
    input.removeAttribute('aria-invalid');
    const message = messageOf(input);
    message.hidden = true;
    message.textContent = '';
  }
  const general = form.querySelector('.form-error');
  general.hidden = true;
  general.textContent = '';
}

/** Shows `problem`: each field error beside its field (focus on the first), the rest on top. */
export function showErrors(form, problem) {
  clearErrors(form);
  const general = form.querySelector('.form-error');
  let first = null;
  const unplaced = [];
  for (const error of problem.errors) {
    const name = fieldsOf(form).find((field) => field === error.field);
    if (!name) { unplaced.push(error.message); continue; }
    const input = form.elements[name];
    input.setAttribute('aria-invalid', 'true');
    const message = messageOf(input);
    message.textContent = error.message;
    message.hidden = false;
    first ??= input;
  }
  if (!problem.errors.length || unplaced.length) {
    general.textContent = unplaced.length ? unplaced.join(' ') : problem.message;
    general.hidden = false;
  }
  (first || form.elements.title).focus();
}
