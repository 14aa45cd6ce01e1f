// The admin API's entity row (a queue or subscription with its counts and dead-letter alert state, as
// GET /api/entities lists it and GET /api/tree shows it) is declared once, in src/contract/admin-api.ts, a
// type-only module the server, the CLI and the browser explorer all import (issue 38 item 4): before, the
// explorer, the CLI and the HTTP side each declared their own, which could drift apart unnoticed.

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../../src', import.meta.url));
const CONTRACT = 'contract/admin-api.ts';

function sources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
    const p = path.join(dir, d.name);
    return d.isDirectory() ? sources(p) : p.endsWith('.ts') ? [p] : [];
  });
}

/** Files (relative to src/) that declare an interface or type alias with one of these names. */
function declaring(names: string[]): string[] {
  const decl = new RegExp(`^export (interface|type) (${names.join('|')})\\b|^(interface|type) (${names.join('|')})\\b`, 'm');
  return sources(SRC)
    .filter((f) => decl.test(fs.readFileSync(f, 'utf8')))
    .map((f) => path.relative(SRC, f))
    .sort();
}

describe('the admin tree row type', () => {
  it('is declared once, in the shared type-only contract', () => {
    expect(declaring(['EntityRow', 'TreeEntity', 'TreeSubscription', 'TreeTopic', 'Tree'])).toEqual([CONTRACT]);
  });

  it('is what the server, the CLI and the explorer import', () => {
    for (const user of ['http/admin-api.ts', 'http/explorer-api.ts', 'cli/admin.ts', 'explorer/types.ts']) {
      expect(fs.readFileSync(path.join(SRC, user), 'utf8'), user).toMatch(/^(import|export) type \{[^}]*\} from '\.\.\/contract\/admin-api\.js';$/m);
    }
  });
});
