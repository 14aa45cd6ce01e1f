// Every relative link of the README and the manual (docs/*.md) resolves: the file exists, and an anchor names a
// heading of the target as GitHub derives it (github-slugger, the slugs GitHub gives headings). A section moved
// or renamed therefore fails here instead of leaving a dead link for a reader.

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import GithubSlugger from 'github-slugger';
import { describe, expect, it } from 'vitest';
import { markdownTokens, readDoc } from '../helpers/docs.js';
import type { Token } from 'markdown-it';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DOCS = ['README.md', ...fs.readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

/** The text a heading renders to (its inline code included), which is what GitHub slugs. */
const headingText = (inline: Token): string => (inline.children ?? []).map((c) => (c.type === 'text' || c.type === 'code_inline' ? c.content : '')).join('');

const anchorCache = new Map<string, Set<string>>();

/** The anchors GitHub gives the headings of a Markdown file. */
function anchors(rel: string): Set<string> {
  const known = anchorCache.get(rel);
  if (known) return known;
  const slugger = new GithubSlugger();
  const tokens = markdownTokens(readDoc(rel));
  const found = new Set(tokens.flatMap((t, i) => (t.type === 'heading_open' ? [slugger.slug(headingText(tokens[i + 1]!))] : [])));
  anchorCache.set(rel, found);
  return found;
}

/** Every link and image target of a Markdown file. */
function targets(rel: string): string[] {
  return markdownTokens(readDoc(rel))
    .flatMap((t) => t.children ?? [])
    .flatMap((c) => (c.type === 'link_open' ? [c.attrGet('href')!] : c.type === 'image' ? [c.attrGet('src')!] : []));
}

describe('links in the README and docs/', () => {
  it('finds the pages to check', () => {
    expect(DOCS).toContain('docs/README.md');
    expect(targets('README.md').filter((t) => t.startsWith('docs/')).length).toBeGreaterThan(5);
  });

  for (const doc of DOCS) {
    it(`${doc}: every relative link names an existing file and heading`, () => {
      const broken: string[] = [];
      for (const target of targets(doc)) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//')) continue; // https:, mailto:
        const [file, anchor] = target.split('#') as [string, string | undefined];
        const rel = file === '' ? doc : path.posix.normalize(path.posix.join(path.posix.dirname(doc), decodeURIComponent(file)));
        if (!fs.existsSync(path.join(ROOT, rel))) broken.push(`${target}: no file ${rel}`);
        else if (anchor !== undefined && rel.endsWith('.md') && !anchors(rel).has(decodeURIComponent(anchor))) broken.push(`${target}: no heading #${anchor} in ${rel}`);
      }
      expect(broken).toEqual([]);
    });
  }
});
