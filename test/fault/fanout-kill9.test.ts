// A crash during fan-out leaves every subscription consistent: SIGKILL the broker while producers send to a
// topic with three subscriptions, restart, and check that each message is in all three or in none, and that
// every accepted send is in all three (a topic send is one store transaction).

import { afterAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import { connect, drain, sendMany, type SendOutcome } from '../helpers/amqp-client.js';
import { exited, startChild, writeConfig } from '../helpers/child-broker.js';

const { config, dir } = writeConfig([], {}, [
  { Name: 't', Subscriptions: [{ Name: 's1' }, { Name: 's2' }, { Name: 's3' }] },
]);
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('fan-out under kill -9', () => {
  it('each message is in every subscription or in none; accepted ones in all', async () => {
    const CYCLES = 2;
    const history = new Map<string, SendOutcome>();
    for (let cycle = 0; cycle < CYCLES; cycle++) {
      const b = await startChild(['--config', config]);
      const conn = await connect(b.port);
      const ids = Array.from({ length: 3000 }, (_, i) => `c${cycle}-${i}`);
      const run = sendMany(conn, 't', ids, 64, Buffer.from('payload'));
      await new Promise((r) => setTimeout(r, 200 + Math.random() * 300));
      b.proc.kill('SIGKILL');
      await exited(b.proc);
      for (const [id, o] of await run) history.set(id, o);
      conn.close();
    }
    const b = await startChild(['--config', config]);
    const conn = await connect(b.port);
    const where = new Map<string, Set<string>>();
    for (const sub of ['s1', 's2', 's3']) {
      for (const m of await drain(conn, `t/Subscriptions/${sub}`)) {
        const set = where.get(m.id) ?? new Set<string>();
        set.add(sub);
        where.set(m.id, set);
      }
    }
    conn.close();
    b.proc.kill('SIGTERM');
    expect(await exited(b.proc)).toBe(0);
    const partial = [...where.values()].filter((s) => s.size !== 3).length;
    const ok = [...history].filter(([, o]) => o === 'ok').map(([id]) => id);
    const lost = ok.filter((id) => where.get(id)?.size !== 3).length;
    const figures = { test: 'fanout-kill9', cycles: CYCLES, ok: ok.length, stored: where.size, partial, lost };
    process.stdout.write(JSON.stringify(figures) + '\n');
    expect(ok.length).toBeGreaterThan(0);
    expect(partial).toBe(0);
    expect(lost).toBe(0);
  });
});
