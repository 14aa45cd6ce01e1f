// The actions: a send form (body, content type, subject, ids, schedule, typed application properties),
// per-message Resubmit / Dead-letter / Delete buttons, bulk actions on the checked messages or on a filter
// (reason, subject, age, property) whose confirmation shows the count the broker reports for a dry run, and
// creating and deleting queues, topics and subscriptions through the management API (the ATOM routes the
// SDKs' administration clients use).

import { atom, post, type EntityKind } from './api.js';
import { closeDetail } from './detail.js';
import { $, cell, messageOf, status, valueOf } from './dom.js';
import { select } from './nav.js';
import { refresh, state, VIEWS, writeHash } from './state.js';
import type { Message } from './types.js';

const ACTION_VERBS = { resubmit: 'Resubmit', 'dead-letter': 'Dead-letter', delete: 'Delete' } as const;
type Action = keyof typeof ACTION_VERBS;
const TYPES = ['string', 'long', 'int', 'double', 'boolean', 'timestamp'];

function isSubscription(path: string | null): boolean {
  return /\/subscriptions\//i.test(path || '');
}
function topicOf(path: string): string {
  return path.slice(0, path.search(/\/subscriptions\//i));
}

function addPropRow(): void {
  const row = document.createElement('div');
  const name = document.createElement('input');
  name.placeholder = 'name';
  name.className = 'p-name';
  const type = document.createElement('select');
  type.className = 'p-type';
  for (const t of TYPES) {
    const o = document.createElement('option');
    o.value = t;
    o.textContent = t;
    type.appendChild(o);
  }
  const value = document.createElement('input');
  value.placeholder = 'value';
  value.className = 'p-value';
  const del = document.createElement('button');
  del.textContent = '×';
  del.title = 'remove';
  del.onclick = () => row.remove();
  row.append(name, type, value, del);
  $('#send-props').appendChild(row);
}

async function sendMessage(): Promise<void> {
  const to = valueOf('#send-to').trim();
  if (!to) return status('To: name a queue or topic.', true);
  const body: Record<string, unknown> = { body: valueOf('#send-body') };
  const fields = { contentType: '#send-content-type', subject: '#send-subject', messageId: '#send-message-id',
    sessionId: '#send-session-id', correlationId: '#send-correlation-id', scheduledEnqueueTimeUtc: '#send-schedule' };
  for (const [k, sel] of Object.entries(fields)) {
    const v = valueOf(sel).trim();
    if (v) body[k] = v;
  }
  const props: Record<string, { type: string; value: string | boolean }> = {};
  for (const row of document.querySelectorAll('#send-props > div')) {
    const name = row.querySelector<HTMLInputElement>('.p-name')!.value.trim();
    if (!name) continue;
    const type = row.querySelector<HTMLSelectElement>('.p-type')!.value, raw = row.querySelector<HTMLInputElement>('.p-value')!.value;
    props[name] = { type, value: type === 'boolean' ? raw === 'true' : raw };
  }
  if (Object.keys(props).length) body.applicationProperties = props;
  try {
    const r = await post<{ messageId: string; entity: string }>('entities/' + encodeURIComponent(to) + '/send', body);
    status('Sent message ' + r.messageId + ' to ' + r.entity + '.');
  } catch (err) {
    status(messageOf(err), true);
  }
  await refresh();
}

interface ActionReply {
  count: number;
  entity: string;
  to?: string;
  skipped?: number;
  /** Dry runs: how many messages a filter looked at, and where it stopped. */
  scanned?: number;
  next?: number | null;
}

// One action on a selection: a dry run first, so the confirmation names the count the broker will act on.
async function act(action: Action, selection: Record<string, unknown>, what: string): Promise<void> {
  const path = 'entities/' + encodeURIComponent(state.entity ?? '') + '/' + action;
  const base = { view: state.view, ...selection };
  try {
    const dry = await post<ActionReply>(path, { ...base, dryRun: true });
    // A filter looks at a bounded number of messages per request; its next says it stopped before the view's end.
    const reach = dry.next ? ' (among the first ' + dry.scanned + ' messages looked at; not searched from sequence number ' + dry.next + ' on)' : '';
    if (!dry.count) return status('No message matches' + reach + ': nothing to ' + ACTION_VERBS[action].toLowerCase() + '.');
    const where = action === 'resubmit' ? ' to ' + dry.to : action === 'dead-letter' ? ' to the dead-letter queue' : ' for good';
    if (!confirm(ACTION_VERBS[action] + ' ' + dry.count + ' message(s) ' + what + where + reach + '?')) return;
    const r = await post<ActionReply>(path, base);
    status(ACTION_VERBS[action] + ': ' + r.count + ' message(s) from ' + r.entity + (r.to ? ' to ' + r.to : '') +
      (r.skipped ? '; skipped ' + r.skipped + ' (gone or locked)' : '') + '.');
    closeDetail();
  } catch (err) {
    status(messageOf(err), true);
  }
  await refresh();
}

function checkedSeqs(): number[] {
  return [...document.querySelectorAll<HTMLInputElement>('#messages input.pick:checked')].map((c) => Number(c.value));
}

function bulk(action: Action): Promise<void> {
  const seqs = checkedSeqs();
  if (seqs.length) return act(action, { sequenceNumbers: seqs }, '(the checked ones) of ' + state.entity);
  const filter: Record<string, string | number> = {};
  const field = (sel: string): string => valueOf(sel).trim();
  if (field('#f-reason')) filter.reason = field('#f-reason');
  if (field('#f-subject')) filter.subject = field('#f-subject');
  if (field('#f-older')) filter.olderThanSeconds = Math.round(Number(field('#f-older')) * 60);
  if (field('#f-property')) filter.property = field('#f-property');
  const desc = Object.keys(filter).length ? 'matching ' + JSON.stringify(filter) : 'in the ' + VIEWS[state.view].toLowerCase() + ' view';
  return act(action, { filter }, desc + ' of ' + state.entity);
}

/** Header cells for the pick and action columns. */
export function actionHead(head: HTMLTableRowElement): void {
  const pick = document.createElement('th');
  pick.dataset.col = 'pick';
  const all = document.createElement('input');
  all.type = 'checkbox';
  all.title = 'check all';
  all.onclick = () => {
    for (const c of document.querySelectorAll<HTMLInputElement>('#messages input.pick')) c.checked = all.checked;
  };
  pick.appendChild(all);
  head.prepend(pick);
  const th = document.createElement('th');
  th.textContent = 'Actions';
  th.dataset.col = 'actions';
  head.appendChild(th);
}

/** A message row's pick box and its Resubmit / Dead-letter / Delete buttons. */
export function actionCells(tr: HTMLTableRowElement, m: Message): void {
  const pick = document.createElement('td');
  pick.dataset.col = 'pick';
  const box = document.createElement('input');
  box.type = 'checkbox';
  box.className = 'pick';
  box.value = String(m.sequenceNumber);
  box.onclick = (ev) => ev.stopPropagation();
  pick.appendChild(box);
  tr.prepend(pick);
  const td = cell(tr, '', 'acts');
  td.dataset.col = 'actions';
  const actions: Action[] = state.view === 'deadletter' ? ['resubmit', 'delete'] : ['resubmit', 'dead-letter', 'delete'];
  for (const a of actions) {
    const btn = document.createElement('button');
    btn.textContent = ACTION_VERBS[a];
    btn.dataset.action = a;
    if (a === 'delete') btn.className = 'danger';
    // A locked message belongs to its receiver until it settles or the lock ends (Service Bus peek-lock).
    btn.disabled = m.state === 'locked';
    if (btn.disabled) btn.title = 'locked by a receiver';
    btn.onclick = (ev) => {
      ev.stopPropagation();
      void act(a, { sequenceNumbers: [m.sequenceNumber] }, 'number ' + m.sequenceNumber + ' of ' + state.entity);
    };
    td.appendChild(btn);
  }
}

async function createEntity(): Promise<void> {
  const kind = valueOf('#new-kind') as EntityKind;
  let name = valueOf('#new-name').trim();
  if (!name) return status('Name: required.', true);
  if (kind === 'subscription' && !isSubscription(name)) {
    const topic = valueOf('#new-topic').trim();
    if (!topic) return status('Topic: a subscription needs its topic.', true);
    name = topic + '/Subscriptions/' + name;
  }
  try {
    await atom('PUT', name, kind);
    status('Created ' + kind + ' ' + name + '.');
    select(name, 'active');
  } catch (err) {
    status(messageOf(err), true);
    await refresh();
  }
}

async function deleteEntity(): Promise<void> {
  const path = state.entity;
  if (!path) return status('Select an entity first.', true);
  const what = state.kind === 'topic' ? 'topic' : isSubscription(path) ? 'subscription' : 'queue';
  if (!confirm('Delete the ' + what + ' ' + path + ' and every message in it, for good?')) return;
  try {
    await atom('DELETE', path);
    status('Deleted ' + what + ' ' + path + '.');
    state.entity = null;
    closeDetail();
    writeHash();
  } catch (err) {
    status(messageOf(err), true);
  }
  await refresh();
}

/** Fills the send form's target from the selection (a subscription sends through its topic). */
export function syncActions(): void {
  const to = state.entity ? (isSubscription(state.entity) ? topicOf(state.entity) : state.entity) : '';
  const sendTo = $<HTMLInputElement>('#send-to');
  if (sendTo.dataset.auto !== 'no') sendTo.value = to;
  $('#bulk').hidden = state.kind === 'topic' || !state.entity;
  $('#bulk-deadletter').hidden = state.view === 'deadletter';
  $('#f-reason').hidden = state.view !== 'deadletter';
}

/** Wires the forms and the bulk bar. */
export function initActions(): void {
  $('#send-to').oninput = () => {
    $('#send-to').dataset.auto = 'no';
  };
  $('#send-add-prop').onclick = addPropRow;
  $('#send-button').onclick = sendMessage;
  $('#create-button').onclick = createEntity;
  $('#delete-entity').onclick = deleteEntity;
  $('#bulk-resubmit').onclick = () => bulk('resubmit');
  $('#bulk-deadletter').onclick = () => bulk('dead-letter');
  $('#bulk-delete').onclick = () => bulk('delete');
}
