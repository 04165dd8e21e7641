// The key prompt (a modal dialog): shown when the API answers 401, with the server's reason
// (missing, or not right), or from the header's key button to change the key. `current` says
// what the key in use may do (from GET /keys/self). Resolves to the key entered, or null when
// cancelled. The key is kept in sessionStorage (api.js): this tab only, gone when it closes.

export function askToken(problem, { current = '', title = 'Key required' } = {}) {
  const dialog = document.getElementById('token-dialog');
  const form = document.getElementById('token-form');
  const cancelButton = document.getElementById('token-cancel');
  const currentLine = document.getElementById('token-current');
  return new Promise((resolve) => {
    document.getElementById('token-title').textContent = title;
    document.getElementById('token-reason').textContent = problem?.message || 'This server is locked.';
    currentLine.textContent = current ? `In use: ${current}.` : '';
    currentLine.hidden = !current;
    form.elements.token.value = '';
    const finish = (token) => {
      form.removeEventListener('submit', submit);
      cancelButton.removeEventListener('click', cancel);
      dialog.removeEventListener('cancel', cancel);
      if (dialog.open) dialog.close();
      resolve(token);
    };
    const submit = (event) => {
      event.preventDefault();
      const token = form.elements.token.value.trim();
      if (token) finish(token);
    };
    const cancel = (event) => { event?.preventDefault(); finish(null); };
    form.addEventListener('submit', submit);
    cancelButton.addEventListener('click', cancel);
    dialog.addEventListener('cancel', cancel);
    dialog.showModal();
    form.elements.token.focus();
  });
}
