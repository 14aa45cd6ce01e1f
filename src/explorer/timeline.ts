// The delivery history of the open message (issue 39): its attempts as a timeline (one bar per attempt from its
// lock to its end, late settles marked past it), the events that moved it, its overlaps and the pattern they form.
// Drawn from GET /api/message's `deliveries`, `events`, `overlaps` and `pattern`; text only, as everywhere.

import { $, cell, noteRow } from './dom.js';
import type { Attempt, MessageDetail } from './types.js';

const PATTERNS: Record<string, string> = {
  slowConsumer: 'Slow consumer: attempts keep ending in lock expiry while the receiver is still attached.',
  poison: 'Poison message: attempts keep ending in abandons, or in the receiver dropping its link while holding it.',
};

function iso(ms: number): string {
  return new Date(ms).toISOString().slice(0, 23).replace('T', ' ');
}

function who(a: Attempt): string {
  const h = a.holder ?? {};
  return [h.receiver, h.container, h.link].filter(Boolean).join(' · ') || 'unknown receiver';
}

/** Draws the history of the message `r` describes. */
export function drawTimeline(r: MessageDetail): void {
  const overlapped = new Set(r.overlaps.flatMap((o) => o.attempts));
  const badge = $('#detail-overlap');
  badge.hidden = r.overlaps.length === 0;
  badge.textContent = r.overlaps.length + ' overlap' + (r.overlaps.length === 1 ? '' : 's');
  $('#detail-pattern').textContent = r.pattern ? PATTERNS[r.pattern] ?? r.pattern : '';
  const now = Date.now();
  const ends = r.deliveries.map((a) => Math.max(a.end?.at ?? now, ...(a.late ?? []).map((l) => l.at)));
  const t0 = Math.min(...r.deliveries.map((a) => a.lockedAt));
  const span = Math.max(1, Math.max(...ends) - t0);
  const body = $('#detail-timeline tbody');
  body.replaceChildren();
  for (const a of r.deliveries) {
    const tr = document.createElement('tr');
    tr.className = 'attempt' + (overlapped.has(a.n) ? ' overlapping' : '');
    tr.dataset.attempt = String(a.n);
    cell(tr, '#' + a.n);
    cell(tr, who(a));
    cell(tr, iso(a.lockedAt));
    const how = a.end ? a.end.how + (a.end.holderGone ? ' (receiver gone)' : '') + (a.end.reason ? ': ' + a.end.reason : '') : 'holding';
    cell(tr, how).dataset.end = a.end?.how ?? 'open';
    cell(tr, String(a.renewCount ?? 0), 'num');
    const track = cell(tr, '', 'track');
    const bar = document.createElement('div');
    bar.className = 'bar' + (a.end ? '' : ' open');
    bar.style.marginLeft = ((100 * (a.lockedAt - t0)) / span).toFixed(2) + '%';
    bar.style.width = Math.max(0.5, (100 * ((a.end?.at ?? now) - a.lockedAt)) / span).toFixed(2) + '%';
    track.appendChild(bar);
    for (const l of a.late ?? []) {
      const mark = document.createElement('span');
      mark.className = 'late';
      mark.textContent = 'late ' + l.action + ' at ' + iso(l.at);
      track.appendChild(mark);
    }
    body.appendChild(tr);
  }
  if (!r.deliveries.length) body.appendChild(noteRow('never delivered', 6));
  const notes = $('#detail-events');
  notes.replaceChildren();
  const lines = [
    ...(r.droppedDeliveries ? [r.droppedDeliveries + ' older attempt(s) dropped by the cap'] : []),
    ...r.events.map((e) => iso(e.at) + '  ' + e.kind + (e.detail !== undefined && e.detail !== '' ? ' (' + (typeof e.detail === 'number' ? iso(e.detail) : e.detail) + ')' : '')),
    ...r.overlaps.map((o) => 'overlap: attempts #' + o.attempts[0] + ' and #' + o.attempts[1] + ' held at once from ' + iso(o.from) + (o.until === undefined ? ' (still open)' : ' for ' + (o.until - o.from) + ' ms') + (o.late ? '; #' + o.attempts[0] + "'s " + o.late.action + ' came late' : '')),
  ];
  for (const text of lines) {
    const li = document.createElement('li');
    li.textContent = text;
    notes.appendChild(li);
  }
}
