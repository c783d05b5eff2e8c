/** Forms that start work: a session (prompt, mode) or a fix (task, test command). */
import { api } from '../api.js';
import { el } from '../dom.js';
import { takeDraft } from '../draft.js';
import type { Stop } from '../main.js';

const MODES = ['ask', 'plan', 'edit', 'auto'] as const;

/** Submit on Enter in a textarea; Shift+Enter is a new line. */
function enterSubmits(area: HTMLTextAreaElement, form: HTMLFormElement): void {
  area.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      form.requestSubmit();
    }
  });
}

export function sessionForm(main: HTMLElement): Stop {
  const prompt = el('textarea', { attrs: { id: 'prompt', name: 'prompt', rows: '4', required: '' } });
  const mode = el(
    'select',
    { attrs: { id: 'mode', name: 'mode' } },
    ...MODES.map((m) => el('option', { attrs: { value: m } }, m)),
  );
  const error = el('p', { class: 'error', attrs: { role: 'alert' } });
  const submit = el('button', { attrs: { type: 'submit' } }, 'Start session');
  const form = el(
    'form',
    { class: 'card form', attrs: { 'aria-label': 'Start a session' } },
    el('label', { attrs: { for: 'prompt' } }, 'Prompt'),
    prompt,
    el('p', { class: 'hint' }, 'Enter starts the session; Shift+Enter adds a line.'),
    el('label', { attrs: { for: 'mode' } }, 'Mode'),
    mode,
    el('div', { class: 'actions' }, submit),
    error,
  );
  enterSubmits(prompt, form);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    if (!prompt.value.trim()) return;
    submit.disabled = true;
    error.textContent = '';
    try {
      const res = await api<{ session_id: string }>('/v1/sessions', {
        method: 'POST',
        body: { prompt: prompt.value, mode: mode.value },
      });
      location.hash = `#/s/${res.session_id}`;
    } catch (err) {
      error.textContent = (err as Error).message;
      submit.disabled = false;
    }
  });
  main.append(el('h1', null, 'New session'), form);
  // a selection the person sent from the file viewer, when no session was open
  if (!takeDraft(prompt)) prompt.focus();
  return () => {};
}

export function fixForm(main: HTMLElement): Stop {
  const task = el('textarea', { attrs: { id: 'task', name: 'task', rows: '4', required: '' } });
  const cmd = el('input', {
    attrs: { id: 'test-command', name: 'test_command', type: 'text', placeholder: 'detected when empty' },
  });
  const error = el('p', { class: 'error', attrs: { role: 'alert' } });
  const submit = el('button', { attrs: { type: 'submit' } }, 'Start fix');
  const form = el(
    'form',
    { class: 'card form', attrs: { 'aria-label': 'Start a fix' } },
    el('label', { attrs: { for: 'task' } }, 'What is broken'),
    task,
    el('label', { attrs: { for: 'test-command' } }, 'Test command (optional)'),
    cmd,
    el('div', { class: 'actions' }, submit),
    error,
  );
  enterSubmits(task, form);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    if (!task.value.trim()) return;
    submit.disabled = true;
    error.textContent = '';
    try {
      const body: Record<string, string> = { task: task.value };
      if (cmd.value.trim()) body.test_command = cmd.value.trim();
      const res = await api<{ run_id: string }>('/v1/fix', { method: 'POST', body });
      location.hash = `#/runs/${res.run_id}`;
    } catch (err) {
      error.textContent = (err as Error).message;
      submit.disabled = false;
    }
  });
  main.append(el('h1', null, 'New fix'), form);
  task.focus();
  return () => {};
}
