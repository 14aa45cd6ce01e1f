// Issue 25, row 12: what the broker writes to disk is its owner's alone: the data directory (and each namespace's) is
// 0700, the LMDB files and namespace.json (which holds the namespace's keys) are 0600, whatever the umask.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startBroker } from '../../src/index.js';

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'peeklock-modes-'));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));
const mode = (p: string): string => (fs.statSync(p).mode & 0o777).toString(8);

describe('file modes', () => {
  it('creates the data directories 0700 and the key-bearing and LMDB files 0600', async () => {
    const old = process.umask(0o022);
    const dataDir = path.join(root, 'data');
    const broker = await startBroker({ dataDir });
    try {
      await broker.createNamespace('private-ns', { policies: [{ Name: 'k', Key: 'a2V5', Rights: ['Manage'] }] });
      const ns = path.join(dataDir, 'namespaces', 'private-ns');
      expect({
        dataDir: mode(dataDir),
        dataMdb: mode(path.join(dataDir, 'data.mdb')),
        lockMdb: mode(path.join(dataDir, 'lock.mdb')),
        nsDir: mode(ns),
        definition: mode(path.join(ns, 'namespace.json')),
        nsData: mode(path.join(ns, 'data.mdb')),
      }).toEqual({ dataDir: '700', dataMdb: '600', lockMdb: '600', nsDir: '700', definition: '600', nsData: '600' });
      expect(fs.readdirSync(ns).filter((f) => f.endsWith('.tmp'))).toEqual([]);
    } finally {
      await broker.stop();
      process.umask(old);
    }
  });
});
