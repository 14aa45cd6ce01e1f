// What the page shows: the selected entity, its view and the tree filter. The selection lives in the URL's
// hash (#entity=…&view=…&filter=…&seq=…) so a view can be shared and reloaded.

import { $ } from './dom.js';

/** The message views of a queue or subscription, keyed as the admin API's `view`. */
export const VIEWS = { active: 'Active', deadletter: 'Dead-letter', scheduled: 'Scheduled', deferred: 'Deferred' } as const;
/** One of the views. */
export type View = keyof typeof VIEWS;

/** The page's selection. */
export const state: {
  entity: string | null;
  kind: 'topic' | 'entity' | null;
  view: View;
  filter: string;
  /** The message whose detail is open. */
  seq: number | null;
} = { entity: null, kind: null, view: 'active', filter: '', seq: null };

/** True when `v` names a view. */
export function isView(v: string | null): v is View {
  return v !== null && Object.hasOwn(VIEWS, v);
}

/** Reads the selection from the hash. */
export function readHash(): void {
  const h = new URLSearchParams(location.hash.slice(1));
  state.entity = h.get('entity') || null;
  const view = h.get('view');
  state.view = isView(view) ? view : 'active';
  state.filter = h.get('filter') || '';
  state.seq = Number(h.get('seq')) || null;
  $<HTMLInputElement>('#filter').value = state.filter;
}

/** Writes the selection to the hash (without a history entry). */
export function writeHash(): void {
  const h = new URLSearchParams();
  if (state.entity) h.set('entity', state.entity);
  if (state.view !== 'active') h.set('view', state.view);
  if (state.filter) h.set('filter', state.filter);
  if (state.seq) h.set('seq', String(state.seq));
  const next = '#' + h.toString();
  if (location.hash !== next) history.replaceState(null, '', next);
}

let refresher: () => Promise<void> = async () => undefined;

/** Sets the page's refresh (main.ts), which the parts call after they change something. */
export function setRefresh(fn: () => Promise<void>): void {
  refresher = fn;
}

/** Redraws the page from the broker; never rejects (a failure shows in the status bar). */
export function refresh(): Promise<void> {
  return refresher();
}
