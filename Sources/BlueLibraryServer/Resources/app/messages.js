// The banner: what happened, what went wrong (and for a 429, when to try again), with an
// optional action button. It is a polite live region, so screen readers hear it.

import { Problem } from './api.js';

const banner = () => document.getElementById('banner');

/** Shows `text` in the banner; `action` ({label, run}) adds a button. */
export function announce(text, { action, kind = 'info' } = {}) {
  const element = banner();
  element.replaceChildren(document.createTextNode(text));
  element.className = `banner ${kind}`;
  if (action) {
    const button = document.createElement('button');
    button.type = 'button';
    button.textContent = action.label;
    button.addEventListener('click', action.run);
    element.append(' ', button);
  }
  element.hidden = false;
}

export function clearBanner() {
  banner().hidden = true;
  banner().replaceChildren();
}

/** Says what went wrong while `doing` something; for 429, when to try again. */
export function report(error, doing) {
  if (error instanceof Problem && error.status === 429) {
    const seconds = error.retryAfter ?? 60;
    const at = new Date(Date.now() + seconds * 1000).toLocaleTimeString();
    announce(`${doing} was refused: too many attempts. Try again in ${seconds} s (at ${at}).`, { kind: 'error' });
    return;
  }
  const detail = error instanceof Problem ? error.message : 'the server could not be reached.';
  announce(`${doing} failed: ${detail}`, { kind: 'error' });
}
