// The message table of the selected queue or subscription, one view at a time (active, dead-letter, scheduled,
// deferred), with the SDK's field names; a click opens a message's detail.

import { actionCells, actionHead, syncActions } from './actions.js';
import { api } from './api.js';
import { showDetail } from './detail.js';
import { $, cell, noteRow, utc } from './dom.js';
import { state, type View } from './state.js';
import type { Message, MessagePage } from './types.js';

interface Column {
  key: string;
  label: string;
  cls?: string;
  time?: boolean;
  /** Shown for a time that is not set. */
  none?: string;
  views?: View[];
}

/** Messages a view asks for at once. */
const PAGE = 100;

// Columns of the message table, keyed by the admin API's field (the SDK's ServiceBusReceivedMessage names).
// 'views' limits a column to some views: dead-letter fields are always empty outside the dead-letter queue,
// and a scheduled message has a due time but can never be locked.
const COLUMNS: Column[] = [
  { key: 'sequenceNumber', label: 'Seq', cls: 'num' },
  { key: 'messageId', label: 'Message id' },
  { key: 'state', label: 'State' },
  { key: 'deliveryCount', label: 'Deliveries', cls: 'num' },
  { key: 'enqueuedTimeUtc', label: 'Enqueued (UTC)', time: true },
  { key: 'scheduledEnqueueTimeUtc', label: 'Scheduled for (UTC)', time: true, views: ['scheduled'] },
  { key: 'expiresAtUtc', label: 'Expires (UTC)', time: true, none: 'never' },
  { key: 'lockedUntilUtc', label: 'Locked until (UTC)', views: ['active', 'deadletter', 'deferred'] },
  { key: 'deadLetterReason', label: 'Dead-letter reason', views: ['deadletter'] },
  { key: 'deadLetterErrorDescription', label: 'Dead-letter description', views: ['deadletter'] },
  { key: 'properties', label: 'Properties' },
  { key: 'body', label: 'Body' },
];
// Message properties shown in the Properties column when set, under the SDK's names.
const PROPERTY_KEYS = ['correlationId', 'contentType', 'subject', 'to', 'replyTo', 'replyToSessionId', 'sessionId',
  'partitionKey', 'timeToLive', 'deadLetterSource'];

function properties(m: Message): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of PROPERTY_KEYS) if (m[k] !== null && m[k] !== undefined) out[k] = m[k];
  // The dead-letter reason and description have their own columns.
  const app = { ...m.applicationProperties };
  delete app.DeadLetterReason;
  delete app.DeadLetterErrorDescription;
  if (Object.keys(app).length) out.applicationProperties = app;
  return out;
}

function messageCell(tr: HTMLTableRowElement, col: Column, m: Message): void {
  let td: HTMLTableCellElement;
  const v = m[col.key];
  if (col.key === 'properties' || col.key === 'body') {
    const pre = document.createElement('pre');
    // Properties one per line as name: JSON value, so a string "2" and a number 2 still look different.
    pre.textContent = col.key === 'body' ? m.bodyPreview + (m.bodyTruncated ? ' …' : '')
      : Object.entries(properties(m)).map(([k, p]) => k + ': ' + JSON.stringify(p)).join('\n');
    td = cell(tr, '');
    td.appendChild(pre);
  } else if (col.key === 'lockedUntilUtc') {
    td = cell(tr, m.lockedUntilUtc ? utc(m.lockedUntilUtc) + (m.lockHolder ? ' by ' + m.lockHolder : '') : '');
  } else if (col.time) {
    td = cell(tr, typeof v === 'string' && v ? utc(v) : col.none || '', 'time');
    if (typeof v === 'string' && v) td.title = v;
  } else {
    td = cell(tr, v ?? '', col.cls);
  }
  td.dataset.col = col.key;
}

/** Draws the selected entity's view (a topic stores nothing, so it gets a note instead). */
export async function loadMessages(): Promise<void> {
  $('#selected').textContent = state.entity || '';
  const topic = state.kind === 'topic';
  for (const b of document.querySelectorAll<HTMLButtonElement>('nav button')) b.className = b.dataset.view === state.view ? 'on' : '';
  $('nav').hidden = topic;
  $('#redrive').hidden = topic || state.view !== 'deadletter';
  $('#purge').hidden = topic || (state.view !== 'active' && state.view !== 'deadletter');
  syncActions();
  const columns = COLUMNS.filter((c) => !c.views || c.views.includes(state.view));
  const head = $<HTMLTableRowElement>('#messages thead tr');
  head.replaceChildren();
  for (const c of columns) {
    const th = document.createElement('th');
    th.textContent = c.label;
    th.dataset.col = c.key;
    if (c.cls) th.className = c.cls;
    head.appendChild(th);
  }
  if (!topic && state.entity) actionHead(head);
  const span = columns.length + (!topic && state.entity ? 2 : 0);
  const tbody = $('#messages tbody');
  if (!state.entity) return tbody.replaceChildren();
  if (topic) return tbody.replaceChildren(noteRow('A topic stores nothing itself: pick one of its subscriptions to see messages.', span));
  const { messages, next } = await api<MessagePage>('entities/' + encodeURIComponent(state.entity) + '/messages?view=' + state.view + '&count=' + PAGE);
  tbody.replaceChildren();
  for (const m of messages) {
    const tr = document.createElement('tr');
    tr.className = 'message' + (m.sequenceNumber === state.seq ? ' open' : '');
    tr.dataset.seq = String(m.sequenceNumber);
    tr.onclick = () => showDetail(m.sequenceNumber);
    for (const c of columns) messageCell(tr, c, m);
    actionCells(tr, m);
    tbody.appendChild(tr);
  }
  if (!messages.length) tbody.appendChild(noteRow('No messages.', span));
  // A view looks at a bounded number of stored messages per request (the admin API's next).
  if (next && messages.length < PAGE) tbody.appendChild(noteRow('Only the front of the queue was looked at (up to sequence number ' + (next - 1) + ').', span));
}
