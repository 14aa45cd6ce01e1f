// Transactions driven by a Qpid Proton client (test/fault/proton_txn_load.py) for the crash tests: each takes an
// input from `in`, sends three outputs via `in` to `out` (send-via) and completes the input, all in one AMQP
// transaction, several open at once. Also the all-or-nothing check of what the store holds afterwards
// (docs/durability.md, "Transactions").

import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const PYTHON = '/usr/bin/python3';
const DRIVER = fileURLToPath(new URL('../fault/proton_txn_load.py', import.meta.url));

/** True where Debian's python3-qpid-proton is installed. */
export const hasProton = spawnSync(PYTHON, ['-c', 'import proton'], { stdio: 'ignore' }).status === 0;

/** One event of the driver: a transaction declared, committed (the discharge accepted) or failed, or the broker gone. */
export interface TxnEvent {
  ev: 'declare' | 'committed' | 'failed' | 'gone';
  id: string;
}

/** Runs the Proton driver against `port` (8 transactions open at once) until the broker goes away, at most 60 s. */
export function driveTransactions(port: number): { events: TxnEvent[]; done: Promise<void> } {
  const events: TxnEvent[] = [];
  const proc = spawn('timeout', ['60', PYTHON, DRIVER, String(port), '8'], { stdio: ['ignore', 'pipe', 'ignore'] });
  let buf = '';
  proc.stdout.on('data', (c: Buffer) => {
    buf += c.toString();
    const lines = buf.split('\n');
    buf = lines.pop()!;
    for (const l of lines) if (l.trim()) events.push(JSON.parse(l) as TxnEvent);
  });
  return { events, done: new Promise((r) => proc.once('exit', () => r())) };
}

/** How the inputs `ids` ended, given the message ids stored in `in` and in `out` and the committed transactions. */
export function transactionOutcomes(ids: Iterable<string>, inputs: Set<string>, outIds: string[], committed: Set<string>): {
  applied: number; partial: string[]; lostCommit: string[]; duplicated: string[];
} {
  const outputs = new Map<string, number>();
  for (const id of outIds) outputs.set(id, (outputs.get(id) ?? 0) + 1);
  const r = { applied: 0, partial: [] as string[], lostCommit: [] as string[], duplicated: [] as string[] };
  for (const id of ids) {
    const outs = [0, 1, 2].map((i) => outputs.get(`${id}-o${i}`) ?? 0);
    if (outs.some((n) => n > 1)) r.duplicated.push(id);
    const present = outs.filter((n) => n > 0).length;
    if (committed.has(id) && (inputs.has(id) || present !== 3)) r.lostCommit.push(id);
    if (inputs.has(id) && present === 0) continue;
    if (!inputs.has(id) && present === 3) r.applied++;
    else r.partial.push(id);
  }
  return r;
}
