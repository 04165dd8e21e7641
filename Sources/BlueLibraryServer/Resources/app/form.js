// The "Add album" dialog: reads the fields, and shows a 422 problem's field errors next to
// the fields they name.

const FIELDS = ['title', 'artist', 'genre', 'year', 'coverUrl', 'index'];

/** The request body from the form: empty optional fields are left out. */
export function albumBody(form) {
  const value = (name) => form.elements[name].value.trim();
  const body = { title: value('title'), artist: value('artist') };
  if (value('genre')) body.genre = value('genre');
  if (value('coverUrl')) body.coverUrl = value('coverUrl');
  const number = (text) => (/^-?\d+$/.test(text) ? Number(text) : text);
  if (value('year')) body.year = number(value('year'));
  if (value('index')) body.index = number(value('index'));
  return body;
}

export function clearErrors(form) {
  for (const name of FIELDS) {
    const input = form.elements[name];
    input.removeAttribute('aria-invalid');
    const message = document.getElementById(`${name}-error`);
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
    const name = FIELDS.find((field) => field === error.field);
    if (!name) { unplaced.push(error.message); continue; }
    const input = form.elements[name];
    input.setAttribute('aria-invalid', 'true');
    const message = document.getElementById(`${name}-error`);
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
