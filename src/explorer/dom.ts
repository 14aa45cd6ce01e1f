// The few DOM helpers every part of the page uses. Values always go in as text (textContent), never as HTML,
// so nothing a message carries can run (the page's CSP also requires Trusted Types for HTML sinks).

/** The element `selector` names; the page's markup (index.html) always has it. */
export function $<T extends Element = HTMLElement>(selector: string): T {
  const el = document.querySelector<T>(selector);
  if (!el) throw new Error(`The page has no ${selector}.`);
  return el;
}

/** The value of the input, select or text area `selector` names. */
export function valueOf(selector: string): string {
  return $<HTMLInputElement>(selector).value;
}

/** Appends a cell holding `text` (as text) to a row. */
export function cell(tr: HTMLTableRowElement, text: unknown, cls?: string): HTMLTableCellElement {
  const td = document.createElement('td');
  td.textContent = String(text);
  if (cls) td.className = cls;
  tr.appendChild(td);
  return td;
}

/** A row of one muted cell spanning `span` columns (empty views, notes). */
export function noteRow(text: string, span: number): HTMLTableRowElement {
  const tr = document.createElement('tr');
  cell(tr, text, 'muted').colSpan = span;
  return tr;
}

/** Shows a line in the status bar (red when it reports a failure). */
export function status(text: string, isError = false): void {
  const s = $('#status');
  s.textContent = text;
  s.className = isError ? 'error' : '';
}

/** The message of anything thrown. */
export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** ISO time as "YYYY-MM-DD hh:mm:ss" (UTC, as the column headers say). */
export function utc(iso: string | null | undefined): string {
  return iso ? iso.slice(0, 19).replace('T', ' ') : '';
}
