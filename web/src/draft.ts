/**
 * Text the person chose to send (a selection in the file viewer) on its way to a message box: kept in
 * sessionStorage until the next message box opens, which takes it; the viewer sends it to the session the
 * person last had open, or to a new session.
 */
const DRAFT = 'keel.draft';
const LAST = 'keel.lastSession';

/** Remember the session the person has open: a selection goes there. */
export function visitSession(id: string): void {
  sessionStorage.setItem(LAST, id);
}

/** Forget the session the person had open (it was another project's). */
export function forgetSession(): void {
  sessionStorage.removeItem(LAST);
}

/** Keep `text` for the next message box and say where that box is. */
export function sendToMessage(text: string): string {
  const prior = sessionStorage.getItem(DRAFT);
  sessionStorage.setItem(DRAFT, prior ? `${prior}\n${text}` : text);
  const last = sessionStorage.getItem(LAST);
  return last ? `#/s/${last}` : '#/new';
}

/** Put the waiting draft into `box` (after what it holds) and forget it; true when there was one. */
export function takeDraft(box: HTMLTextAreaElement): boolean {
  const draft = sessionStorage.getItem(DRAFT);
  if (!draft) return false;
  sessionStorage.removeItem(DRAFT);
  box.value = box.value ? `${box.value}\n${draft}` : draft;
  box.focus();
  box.setSelectionRange(box.value.length, box.value.length);
  return true;
}
