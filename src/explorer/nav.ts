// Moving the selection: a click on an entity, a dead-letter count or a busiest entry selects it.

import { closeDetail } from './detail.js';
import { refresh, state, writeHash, type View } from './state.js';

/** Selects `entity` (and `view`), closing a detail that belonged to the old selection. */
export function select(entity: string | null, view?: View): void {
  if (entity !== state.entity || (view && view !== state.view)) closeDetail();
  state.entity = entity;
  if (view) state.view = view;
  writeHash();
  void refresh();
}
