// `peeklock messages history ENTITY SEQ`: one message's delivery history (issue 39) as a timeline, read from
// GET /api/message: each attempt (who locked it, its renewals, how it ended, late settles), the events that moved
// the message, the overlaps between attempts, and the pattern they form. --json prints the reply's history fields.

import type { MessageHistoryFields } from '../contract/admin-api.js';
import { adminJson, apiUrl, type AdminTarget } from './admin-client.js';

/** The history fields of GET /api/message's reply, with the entity. */
export interface HistoryReply extends MessageHistoryFields {
  entity: string;
}

const PATTERNS = {
  slowConsumer: 'slow consumer: attempts keep ending in lock expiry while the receiver is still attached (the handler outlives the lock)',
  poison: 'poison message: attempts keep ending in abandons, or in the receiver dropping its link or connection while it held the message',
};

/** Fetches and prints one message's delivery history. */
export async function printHistory(t: AdminTarget, entity: string, seq: number, deadLetter: boolean, json: boolean): Promise<void> {
  const url = apiUrl(t.url, ['message'], { entity, seq, view: deadLetter ? 'deadletter' : 'active' });
  const r = await adminJson<HistoryReply>(t, url);
  if (json) {
    const { entity: e, deliveries, droppedDeliveries, events, overlaps, pattern } = r;
    return void process.stdout.write(JSON.stringify({ entity: e, seq, deliveries, droppedDeliveries, events, overlaps, pattern }) + '\n');
  }
  process.stdout.write(historyText(r, seq));
}

/** The history as lines of text, oldest first. */
export function historyText(r: HistoryReply, seq: number): string {
  const iso = (ms: number): string => new Date(ms).toISOString();
  const lines: string[] = [`${r.entity} #${seq}: ${r.deliveries.length} delivery attempt(s) kept${r.droppedDeliveries ? `, ${r.droppedDeliveries} older dropped` : ''}`];
  const items: [number, string][] = [];
  for (const a of r.deliveries) {
    const who = [a.holder?.receiver && `receiver ${a.holder.receiver}`, a.holder?.container && `container ${a.holder.container}`, a.holder?.connection && `connection ${a.holder.connection}`, a.holder?.link && `link ${a.holder.link}`]
      .filter(Boolean)
      .join(', ');
    items.push([a.lockedAt, `attempt ${a.n} locked (${a.via}${who ? `; ${who}` : ''}) until ${iso(a.lockedUntil)}`]);
    for (const at of a.renewals ?? []) items.push([at, `attempt ${a.n} renewed`]);
    if (a.end) {
      const why = [a.end.reason, a.end.description].filter(Boolean).join(': ');
      const gone = a.end.holderGone ? ' (the receiver had dropped its link or connection)' : '';
      const props = a.end.props ? ` properties ${JSON.stringify(a.end.props)}` : '';
      items.push([a.end.at, `attempt ${a.n} ended: ${a.end.how}${why ? ` (${why})` : ''}${gone}${props}`]);
    } else items.push([Number.MAX_SAFE_INTEGER, `attempt ${a.n} is holding the lock now`]);
    for (const l of a.late ?? []) items.push([l.at, `attempt ${a.n}: late ${l.action} after its lock lapsed (refused: MessageLockLost)`]);
  }
  for (const e of r.events) items.push([e.at, `${e.kind}${e.detail !== undefined && e.detail !== '' ? ` (${typeof e.detail === 'number' ? iso(e.detail) : e.detail})` : ''}`]);
  items.sort((x, y) => x[0] - y[0]);
  for (const [at, text] of items) lines.push(`  ${at === Number.MAX_SAFE_INTEGER ? ' '.repeat(24) : iso(at)}  ${text}`);
  for (const o of r.overlaps) {
    const span = o.until === undefined ? 'still open' : `${o.until - o.from} ms`;
    lines.push(`OVERLAP: attempts ${o.attempts[0]} and ${o.attempts[1]} were held at once from ${iso(o.from)} (${span})${o.late ? `; attempt ${o.attempts[0]}'s ${o.late.action} came late` : ''}`);
  }
  if (r.pattern) lines.push(`pattern: ${PATTERNS[r.pattern]}`);
  return lines.join('\n') + '\n';
}
