// The entity tree (GET /api/tree): queues, then each topic followed by its subscriptions with their rules,
// filtered by name. With 1,000 entities a refresh rewrites only the counts of rows already drawn: the rows are
// rebuilt only when the set of entities (or a rule, or the filter) changes.

import { api } from './api.js';
import { $, cell } from './dom.js';
import { select } from './nav.js';
import { state, writeHash } from './state.js';
import type { Tree, TreeEntity, TreeSubscription, TreeTopic } from './types.js';

const COUNT_KEYS = ['active', 'locked', 'scheduled', 'deferred'] as const;
type Row = { kind: 'queue'; e: TreeEntity } | { kind: 'topic'; e: TreeTopic } | { kind: 'subscription'; e: TreeSubscription };
let drawn: { key: string | null; rows: Map<string, HTMLTableRowElement> } = { key: null, rows: new Map() };

/** Forgets the drawn rows, so the next load rebuilds them (the filter changed under them). */
export function redrawTree(): void {
  drawn.key = null;
}

/** Tree rows in order: queues, then each topic followed by its subscriptions (with their rules). */
function treeRows(tree: Tree): Row[] {
  const f = state.filter.toLowerCase();
  const hit = (p: string): boolean => !f || p.toLowerCase().includes(f);
  const rows: Row[] = [];
  for (const q of tree.queues) if (hit(q.path)) rows.push({ kind: 'queue', e: q });
  for (const t of tree.topics) {
    const subs = hit(t.path) ? t.subscriptions : t.subscriptions.filter((s) => hit(s.path));
    if (!subs.length && !hit(t.path)) continue;
    rows.push({ kind: 'topic', e: t });
    for (const s of subs) rows.push({ kind: 'subscription', e: s });
  }
  return rows;
}

function entityRow(r: Row): HTMLTableRowElement {
  const tr = document.createElement('tr');
  tr.className = r.kind === 'topic' ? 'topic' : 'entity ' + r.kind;
  const first = cell(tr, r.kind === 'subscription' ? r.e.name : r.e.path);
  const path = r.e.path;
  if (r.kind === 'topic') {
    tr.dataset.topic = path;
    const k = document.createElement('span');
    k.className = 'kind';
    k.textContent = 'topic · ' + r.e.subscriptions.length + ' subscription(s)';
    first.appendChild(k);
    cell(tr, '').colSpan = 7;
    tr.onclick = () => select(path, 'active');
    return tr;
  }
  tr.dataset.entity = path;
  const badge = document.createElement('span');
  badge.className = 'badge overlap';
  badge.hidden = true;
  first.appendChild(badge);
  if (r.kind === 'subscription') {
    const rules = document.createElement('div');
    rules.className = 'rules';
    rules.textContent = r.e.rules.length ? r.e.rules.join('\n') : 'no rules: receives nothing';
    first.appendChild(rules);
  }
  for (const k of COUNT_KEYS) cell(tr, '', 'num').dataset.count = k;
  const dl = cell(tr, '', 'num dlq');
  dl.dataset.count = 'deadLettered';
  dl.onclick = (ev) => {
    ev.stopPropagation();
    select(path, 'deadletter');
  };
  cell(tr, '', 'num').dataset.count = 'bytes';
  cell(tr, '', 'num').dataset.count = 'consumers';
  tr.onclick = () => select(path);
  return tr;
}

function fillCounts(tr: HTMLTableRowElement, e: TreeEntity): void {
  for (const td of tr.querySelectorAll<HTMLTableCellElement>('td[data-count]')) {
    const v = String(e[td.dataset.count as keyof TreeEntity]);
    if (td.textContent !== v) td.textContent = v;
  }
  const dl = tr.querySelector<HTMLTableCellElement>('td[data-count="deadLettered"]')!;
  dl.classList.toggle('alert', e.deadLetterAlert);
  dl.title = e.deadLetterAlert ? 'at or above the alert threshold (' + e.deadLetterThreshold + ')' : 'open the dead-letter queue';
  // Issue 39: deliveries of this entity that were held by two receivers at once since start.
  const badge = tr.querySelector<HTMLElement>('.badge.overlap');
  if (badge) {
    badge.hidden = !e.overlaps;
    badge.textContent = e.overlaps + ' overlapping';
    badge.title = 'deliveries held by two receivers at once (a lapsed lock whose holder was still working); see a message\'s delivery attempts';
  }
}

/** Loads the tree, draws or updates its rows and selects the first entity when nothing is selected. */
export async function loadEntities(): Promise<void> {
  const tree = await api<Tree>('tree');
  const rows = treeRows(tree);
  // Rebuild only when the rows change; otherwise update the counts in place (fast with 1,000 entities).
  const key = rows.map((r) => r.kind[0] + r.e.path + (r.kind === 'subscription' ? r.e.rules.join('|') : '')).join('\n');
  if (key !== drawn.key) {
    const frag = document.createDocumentFragment();
    const map = new Map<string, HTMLTableRowElement>();
    for (const r of rows) {
      const tr = entityRow(r);
      map.set(r.kind + ':' + r.e.path, tr);
      frag.appendChild(tr);
    }
    $('#entities tbody').replaceChildren(frag);
    drawn = { key, rows: map };
  }
  for (const r of rows) if (r.kind !== 'topic') fillCounts(drawn.rows.get(r.kind + ':' + r.e.path)!, r.e);
  const all = [...tree.queues, ...tree.topics.flatMap((t) => t.subscriptions)];
  if (!state.entity && all.length) {
    state.entity = all[0]!.path;
    writeHash();
  }
  const topic = tree.topics.find((t) => t.path === state.entity);
  state.kind = topic ? 'topic' : 'entity';
  for (const [k, tr] of drawn.rows) tr.classList.toggle('selected', k.slice(k.indexOf(':') + 1) === state.entity);
  $('#ns-title').textContent = 'Namespace ' + tree.namespace + ' (all entities summed)';
  $('#shown').textContent = tree.namespace + ': ' + rows.filter((r) => r.kind !== 'topic').length + ' of ' + all.length + ' entities' + (state.filter ? ' match' : '');
}
