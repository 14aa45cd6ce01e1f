// The power-loss file system's own tests (docs/testing.md, "Power-cut tests"): a checker that cannot fail proves
// nothing, so each mode is shown to lose what was never synced and keep what was, and directory entries are shown to
// need a directory fsync. Every check reads the backing directory after the unmount: that is what a restart sees.

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CUT_MODES, cutfsUnavailable, mountCutfs, type CutMount } from '../helpers/cutfs.js';

const PAGE = 4096;
const unavailable = cutfsUnavailable();

let root = '';
let m: CutMount | undefined;
let mnt = '';

function syncDir(dir: string): void {
  const fd = fs.openSync(dir, 'r');
  fs.fsyncSync(fd);
  fs.closeSync(fd);
}

/** Writes `data` at `offset` of `file` (created if need be) and fdatasyncs it if `sync`. */
function put(file: string, data: Buffer, offset: number, sync: boolean): void {
  const fd = fs.openSync(file, fs.constants.O_RDWR | fs.constants.O_CREAT);
  fs.writeSync(fd, data, 0, data.length, offset);
  if (sync) fs.fdatasyncSync(fd);
  fs.closeSync(fd);
}

const page = (c: string): Buffer => Buffer.alloc(PAGE, c);
const backing = (name: string): string => path.join(m!.backing, name);

async function cutAndUnmount(mode: (typeof CUT_MODES)[number], seed: number): Promise<Awaited<ReturnType<CutMount['cut']>>> {
  const figures = await m!.cut(mode, seed);
  await m!.unmount();
  return figures;
}

describe.skipIf(!!unavailable)(`cutfs, a file system that loses unsynced writes on a cut${unavailable ? ` [skipped: ${unavailable}]` : ''}`, () => {
  beforeEach(async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'peeklock-cutfs-'));
    fs.mkdirSync(path.join(root, 'backing'));
    mnt = path.join(root, 'mnt');
    fs.mkdirSync(mnt);
    m = await mountCutfs(path.join(root, 'backing'), mnt);
  });
  afterEach(async () => {
    await m?.unmount();
    fs.rmSync(root, { recursive: true, force: true });
  });

  it('loses an unsynced write on a cut, and keeps the synced one before it', async () => {
    const f = path.join(mnt, 'f');
    put(f, Buffer.from('synced'), 0, true);
    syncDir(mnt);
    put(f, Buffer.from('-unsynced'), 6, false);
    expect(fs.readFileSync(f, 'utf8')).toBe('synced-unsynced'); // reads see the volatile layer
    const figures = await cutAndUnmount('all', 1);
    expect(fs.readFileSync(backing('f'), 'utf8')).toBe('synced');
    expect(figures).toMatchObject({ files: 1, writes: 1, writesKept: 0 });
  });

  it('keeps a write made through an O_DSYNC descriptor (LMDB writes its meta page so)', async () => {
    const f = path.join(mnt, 'f');
    put(f, Buffer.from('old'), 0, true);
    syncDir(mnt);
    const fd = fs.openSync(f, fs.constants.O_RDWR | fs.constants.O_DSYNC);
    fs.writeSync(fd, Buffer.from('new'), 0, 3, 0);
    fs.closeSync(fd);
    await cutAndUnmount('all', 1);
    expect(fs.readFileSync(backing('f'), 'utf8')).toBe('new');
  });

  it('an armed cut lands just before the nth mutating call: what was synced before it stays, the call fails', async () => {
    const f = path.join(mnt, 'f');
    put(f, Buffer.from('a'), 0, true);
    syncDir(mnt);
    const before = (await m!.stats()).ops;
    await m!.arm('all', 1, 3);
    const fd = fs.openSync(f, fs.constants.O_RDWR);
    fs.writeSync(fd, Buffer.from('1'), 0, 1, 1); // call 1
    fs.fdatasyncSync(fd); // call 2: "a1" is durable
    expect(() => fs.writeSync(fd, Buffer.from('2'), 0, 1, 2)).toThrow(/EIO/); // call 3: the power is off
    expect(() => fs.closeSync(fd)).toThrow(/EIO/); // so is the flush of the close
    const stats = await m!.stats();
    expect(stats).toMatchObject({ down: true, ops: before + 3, lastCut: { atOp: before + 3, op: 'write', mode: 'all' } });
    await m!.unmount();
    expect(fs.readFileSync(backing('f'), 'utf8')).toBe('a1');
  });

  it('refuses every operation after the cut (the power is off)', async () => {
    put(path.join(mnt, 'f'), Buffer.from('x'), 0, true);
    await m!.cut('all', 1);
    expect(() => fs.readdirSync(mnt)).toThrow(/EIO/);
  });

  // Three synced pages of 'a', then unsynced: pages 0..2 overwritten with 'b' (one write each) and page 3 appended.
  async function overwriteAndCut(mode: (typeof CUT_MODES)[number], seed: number): Promise<{ after: Buffer; figures: Awaited<ReturnType<CutMount['cut']>> }> {
    const f = path.join(mnt, 'f');
    put(f, Buffer.concat([page('a'), page('a'), page('a')]), 0, true);
    syncDir(mnt);
    for (let p = 0; p < 4; p++) put(f, page('b'), p * PAGE, false);
    expect(fs.readFileSync(f).equals(Buffer.concat([page('b'), page('b'), page('b'), page('b')]))).toBe(true);
    const figures = await cutAndUnmount(mode, seed);
    return { after: fs.readFileSync(backing('f')), figures };
  }

  it('mode all: every unsynced page is lost', async () => {
    const { after } = await overwriteAndCut('all', 7);
    expect(after.equals(Buffer.concat([page('a'), page('a'), page('a')]))).toBe(true);
  });

  it('mode prefix: the first k unsynced writes are kept, in order, and none after', async () => {
    for (const seed of [1, 2, 3]) {
      if (seed > 1) m = await mountCutfs(m!.backing, mnt);
      fs.rmSync(path.join(mnt, 'f'), { force: true });
      const { after, figures } = await overwriteAndCut('prefix', seed);
      const k = figures.writesKept;
      const expected = [0, 1, 2, 3].filter((p) => p < 3 || p < k).map((p) => page(p < k ? 'b' : 'a'));
      expect(after.equals(Buffer.concat(expected)), `seed ${seed}, k ${k}`).toBe(true);
    }
  });

  it('mode pages: each unsynced page is wholly old or wholly new, and the kept ones are new', async () => {
    const { after, figures } = await overwriteAndCut('pages', 5);
    const pages = Array.from({ length: Math.ceil(after.length / PAGE) }, (_, p) => after.subarray(p * PAGE, (p + 1) * PAGE));
    const fresh = pages.filter((p) => p.equals(page('b'))).length;
    expect(pages.every((p) => p.equals(page('a')) || p.equals(page('b')))).toBe(true);
    expect(fresh).toBe(figures.pagesKept);
    expect(figures.pages).toBe(4);
    expect(after.length).toBeGreaterThanOrEqual(3 * PAGE);
  });

  it('mode torn: all is lost but one page, whose first sectors are new and the rest old', async () => {
    const { after, figures } = await overwriteAndCut('torn', 9);
    expect(figures.tornPages).toBe(1);
    const torn: number[] = [];
    for (let p = 0; p * PAGE < after.length; p++) {
      const pg = after.subarray(p * PAGE, (p + 1) * PAGE);
      if (pg.equals(page('a'))) continue;
      torn.push(p);
      // An appended page (page 3) had no old bytes: its torn copy just ends early.
      const oldAt = pg.indexOf('a'.charCodeAt(0));
      const newBytes = oldAt < 0 ? pg.length : oldAt;
      expect(newBytes % 512, `page ${p} is torn at a sector boundary`).toBe(0);
      expect(newBytes).toBeGreaterThan(0);
      expect(newBytes).toBeLessThan(PAGE);
      expect(pg.subarray(0, newBytes).equals(Buffer.alloc(newBytes, 'b'))).toBe(true);
      expect(pg.subarray(newBytes).equals(Buffer.alloc(pg.length - newBytes, 'a'))).toBe(true);
    }
    expect(torn).toHaveLength(1);
  });

  it('forgets a creation not covered by a directory fsync, even with the file itself synced', async () => {
    put(path.join(mnt, 'new'), Buffer.from('data'), 0, true);
    const figures = await cutAndUnmount('all', 1);
    expect(fs.existsSync(backing('new'))).toBe(false);
    expect(figures.namesForgotten).toBe(1);
  });

  it('keeps a creation followed by a directory fsync', async () => {
    put(path.join(mnt, 'new'), Buffer.from('data'), 0, true);
    syncDir(mnt);
    await cutAndUnmount('all', 1);
    expect(fs.readFileSync(backing('new'), 'utf8')).toBe('data');
  });

  // The write-a-temporary-then-rename pattern, with and without its closing directory fsync.
  async function replaceByRename(dirSync: boolean): Promise<void> {
    put(path.join(mnt, 'f'), Buffer.from('old'), 0, true);
    put(path.join(mnt, 'f.tmp'), Buffer.from('new'), 0, true);
    syncDir(mnt);
    fs.renameSync(path.join(mnt, 'f.tmp'), path.join(mnt, 'f'));
    if (dirSync) syncDir(mnt);
    expect(fs.readFileSync(path.join(mnt, 'f'), 'utf8')).toBe('new');
    await cutAndUnmount('all', 1);
  }

  it('forgets a rename not covered by a directory fsync: the old file is back, and the temporary', async () => {
    await replaceByRename(false);
    expect(fs.readFileSync(backing('f'), 'utf8')).toBe('old');
    expect(fs.readFileSync(backing('f.tmp'), 'utf8')).toBe('new');
  });

  it('keeps a rename followed by a directory fsync', async () => {
    await replaceByRename(true);
    expect(fs.readFileSync(backing('f'), 'utf8')).toBe('new');
    expect(fs.existsSync(backing('f.tmp'))).toBe(false);
  });

  it('brings back a file unlinked without a directory fsync, and forgets a new directory', async () => {
    put(path.join(mnt, 'gone'), Buffer.from('still here'), 0, true);
    syncDir(mnt);
    fs.unlinkSync(path.join(mnt, 'gone'));
    fs.mkdirSync(path.join(mnt, 'sub'));
    put(path.join(mnt, 'sub', 'x'), Buffer.from('x'), 0, true);
    syncDir(path.join(mnt, 'sub'));
    await cutAndUnmount('all', 1);
    expect(fs.readFileSync(backing('gone'), 'utf8')).toBe('still here');
    expect(fs.existsSync(backing('sub'))).toBe(false);
  });
});
