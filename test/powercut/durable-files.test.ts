// The files the broker writes outside LMDB survive a power cut (docs/durability.md, "Power loss"): src/fs/durable.ts
// against cutfs. Each helper is set beside the plain pattern it replaced, which a cut shows to lose the file.

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { makeDirDurable, removeDirDurably, syncDir, writeFileDurably } from '../../src/fs/durable.js';
import { CA_FILES, ensureLocalCa } from '../../src/tls/ca.js';
import { cutfsUnavailable, mountCutfs, type CutMount } from '../helpers/cutfs.js';

const unavailable = cutfsUnavailable();
let root = '';
let mnt = '';
let m: CutMount | undefined;

const backing = (...p: string[]): string => path.join(m!.backing, ...p);
async function cut(): Promise<void> {
  await m!.cut('all', 1);
  await m!.unmount();
}

describe.skipIf(!!unavailable)(`files written durably survive a power cut${unavailable ? ` [skipped: ${unavailable}]` : ''}`, () => {
  beforeEach(async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'peeklock-durable-'));
    mnt = path.join(root, 'mnt');
    fs.mkdirSync(path.join(root, 'backing'));
    fs.mkdirSync(mnt);
    m = await mountCutfs(path.join(root, 'backing'), mnt);
    // The plain pattern runs under a/, the durable one under b/: a directory fsync in b/ must not cover a/.
    for (const d of ['a', 'b']) fs.mkdirSync(path.join(mnt, d));
    syncDir(mnt);
  });
  afterEach(async () => {
    await m?.unmount();
    fs.rmSync(root, { recursive: true, force: true });
  });

  it('loses a file made by mkdir -p and writeFileSync (the old namespace.json), keeps one made durably', async () => {
    fs.mkdirSync(path.join(mnt, 'a', 'namespaces', 'ns'), { recursive: true });
    fs.writeFileSync(path.join(mnt, 'a', 'namespaces', 'ns', 'namespace.json'), '{"Name":"ns"}');
    makeDirDurable(path.join(mnt, 'b', 'namespaces', 'ns'));
    writeFileDurably(path.join(mnt, 'b', 'namespaces', 'ns', 'namespace.json'), '{"Name":"ns"}');
    await cut();
    expect(fs.readdirSync(backing('a'))).toEqual([]);
    expect(fs.readFileSync(backing('b', 'namespaces', 'ns', 'namespace.json'), 'utf8')).toBe('{"Name":"ns"}');
  });

  it('loses a temporary-then-rename without fsyncs (the old key writer), keeps a sync-then-rename', async () => {
    for (const d of ['a', 'b']) {
      const fd = fs.openSync(path.join(mnt, d, 'key'), 'w');
      fs.writeSync(fd, 'v1');
      fs.fdatasyncSync(fd);
      fs.closeSync(fd);
      syncDir(path.join(mnt, d));
    }
    fs.writeFileSync(path.join(mnt, 'a', 'key.tmp'), 'v2');
    fs.renameSync(path.join(mnt, 'a', 'key.tmp'), path.join(mnt, 'a', 'key'));
    writeFileDurably(path.join(mnt, 'b', 'key'), 'v2', 0o600);
    await cut();
    expect(fs.readFileSync(backing('a', 'key'), 'utf8')).toBe('v1');
    expect(fs.readdirSync(backing('a'))).toEqual(['key']);
    expect(fs.readFileSync(backing('b', 'key'), 'utf8')).toBe('v2');
    expect(fs.statSync(backing('b', 'key')).mode & 0o777).toBe(0o600);
    expect(fs.readdirSync(backing('b'))).toEqual(['key']);
  });

  it('a plain recursive delete comes back after a cut; a durable one stays gone', async () => {
    for (const d of ['a', 'b']) {
      makeDirDurable(path.join(mnt, d, 'ns'));
      writeFileDurably(path.join(mnt, d, 'ns', 'namespace.json'), d);
    }
    fs.rmSync(path.join(mnt, 'a', 'ns'), { recursive: true });
    removeDirDurably(path.join(mnt, 'b', 'ns'));
    await cut();
    expect(fs.readFileSync(backing('a', 'ns', 'namespace.json'), 'utf8')).toBe('a');
    expect(fs.readdirSync(backing('b'))).toEqual([]);
  });

  it('keeps the local CA and server certificate the broker generated', async () => {
    const ca = ensureLocalCa(path.join(mnt, 'tls'), ['localhost']);
    await cut();
    expect(fs.readFileSync(backing('tls', CA_FILES.caCert), 'utf8')).toBe(ca.caCert);
    expect(fs.readFileSync(backing('tls', CA_FILES.serverKey), 'utf8')).toBe(ca.serverKey);
    expect(fs.readdirSync(backing('tls')).sort()).toEqual(Object.values(CA_FILES).sort());
  });
});
