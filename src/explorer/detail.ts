// The message detail (GET /api/message): every system property under the SDK's name, application properties
// with their types, the whole body as text, pretty JSON or hex, who holds the lock for how much longer, and its
// delivery history as a timeline (timeline.ts).

import { api } from './api.js';
import { $, cell, messageOf, noteRow, status, utc } from './dom.js';
import { state, writeHash } from './state.js';
import { drawTimeline } from './timeline.js';
import type { MessageDetail } from './types.js';

const SYSTEM_KEYS = ['messageId', 'sequenceNumber', 'correlationId', 'sessionId', 'replyToSessionId', 'partitionKey',
  'contentType', 'subject', 'to', 'replyTo', 'timeToLive', 'enqueuedTimeUtc', 'scheduledEnqueueTimeUtc', 'expiresAtUtc',
  'lockedUntilUtc', 'deliveryCount', 'state', 'deadLetterReason', 'deadLetterErrorDescription', 'deadLetterSource', 'size'];
type Format = 'text' | 'json' | 'hex';

let detail: MessageDetail['message'] | null = null;

/** Closes the detail and unmarks its row. */
export function closeDetail(): void {
  state.seq = null;
  detail = null;
  $('#detail').hidden = true;
  for (const tr of document.querySelectorAll('tr.message.open')) tr.classList.remove('open');
}

/** Opens message `seq` of the selected entity's view. */
export async function showDetail(seq: number): Promise<void> {
  try {
    const r = await api<MessageDetail>('message?entity=' + encodeURIComponent(state.entity ?? '') + '&seq=' + seq + (state.view === 'deadletter' ? '&view=deadletter' : ''));
    const m = (detail = r.message);
    state.seq = seq;
    writeHash();
    for (const tr of document.querySelectorAll<HTMLTableRowElement>('tr.message')) tr.classList.toggle('open', Number(tr.dataset.seq) === seq);
    $('#detail-title').textContent = 'Message ' + seq + ' of ' + r.entity;
    const sys = $('#detail-system tbody');
    sys.replaceChildren();
    for (const k of SYSTEM_KEYS) {
      const tr = document.createElement('tr');
      tr.dataset.field = k;
      const th = document.createElement('th');
      th.textContent = k;
      tr.appendChild(th);
      const v = m[k];
      cell(tr, v === null || v === undefined ? 'null' : typeof v === 'object' ? JSON.stringify(v) : v, v === null ? 'null' : '');
      sys.appendChild(tr);
    }
    const app = $('#detail-app tbody');
    app.replaceChildren();
    for (const [k, v] of Object.entries(m.applicationProperties)) {
      const tr = document.createElement('tr');
      tr.dataset.property = k;
      cell(tr, k);
      cell(tr, m.applicationPropertyTypes[k] || typeof v).dataset.type = '1';
      cell(tr, JSON.stringify(v));
      app.appendChild(tr);
    }
    if (!app.childElementCount) app.appendChild(noteRow('none', 3));
    const lock = $('#detail-lock');
    lock.textContent = r.lockRemainingMs === null ? 'Not locked.'
      : 'Locked by ' + (m.lockHolder || 'an unknown receiver') + ' for ' + Math.ceil(r.lockRemainingMs / 1000) + ' s more (until ' + utc(m.lockedUntilUtc) + ' UTC).';
    lock.dataset.remainingMs = r.lockRemainingMs === null ? '' : String(r.lockRemainingMs);
    const fmt: Format = m.bodyEncoding === 'base64' ? 'hex' : parsesAsJson(m.body) ? 'json' : 'text';
    $<HTMLSelectElement>('#detail-format').value = fmt;
    drawBody();
    drawTimeline(r);
    $('#detail').hidden = false;
  } catch (err) {
    status(messageOf(err), true);
  }
}

function parsesAsJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

function hexDump(bytes: Uint8Array): string {
  const lines: string[] = [];
  for (let i = 0; i < bytes.length; i += 16) {
    const row = bytes.slice(i, i + 16);
    const hex = Array.from(row, (b) => b.toString(16).padStart(2, '0')).join(' ');
    const ascii = Array.from(row, (b) => (b >= 32 && b < 127 ? String.fromCharCode(b) : '.')).join('');
    lines.push(i.toString(16).padStart(8, '0') + '  ' + hex.padEnd(48) + ' ' + ascii);
  }
  return lines.join('\n');
}

/** Draws the open message's body in the format chosen. */
export function drawBody(): void {
  if (!detail) return;
  const fmt = $<HTMLSelectElement>('#detail-format').value as Format;
  let text: string;
  if (fmt === 'hex') {
    const bytes = detail.bodyEncoding === 'base64' ? Uint8Array.from(atob(detail.body), (c) => c.charCodeAt(0)) : new TextEncoder().encode(detail.body);
    text = hexDump(bytes);
  } else if (fmt === 'json') {
    text = parsesAsJson(detail.body) ? JSON.stringify(JSON.parse(detail.body), null, 2) : 'The body is not JSON.';
  } else {
    text = detail.bodyEncoding === 'base64' ? 'The body is binary; choose hex.' : detail.body;
  }
  const body = $('#detail-body');
  body.textContent = text;
  body.dataset.format = fmt;
}
