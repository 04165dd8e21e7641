// The token prompt (a modal dialog): shown when the API answers 401, with the server's reason
// (missing, or not right). Resolves to the token entered, or null when cancelled.

export function askToken(problem) {
  const dialog = document.getElementById('token-dialog');
  const form = document.getElementById('token-form');
  const cancelButton = document.getElementById('token-cancel');
  return new Promise((resolve) => {
    document.getElementById('token-reason').textContent = problem?.message || 'This server is write-protected.';
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
