// The README and the manual in docs/ show code that the tests run; these helpers find that code in the Markdown
// (parsed with markdown-it, as CommonMark, so a ``` inside a block or an indented fence is read as GitHub reads it).

import fs from 'node:fs';
import MarkdownIt, { type Token } from 'markdown-it';

const ROOT = new URL('../../', import.meta.url);
const md = new MarkdownIt();

/** The text of a file of the repository, by its path from the root (`README.md`, `docs/clients.md`). */
export function readDoc(rel: string): string {
  return fs.readFileSync(new URL(rel, ROOT), 'utf8');
}

/** The block tokens of a Markdown text (markdown-it's, with `map` = [first line, line after]). */
export function markdownTokens(markdown: string): Token[] {
  return md.parse(markdown, {});
}

/**
 * The part of `markdown` under the heading written `heading` (`'## Containers'`), up to the next heading of the
 * same or a higher level; throws if there is no such heading, so a renamed section fails the test that reads it.
 */
export function docSection(markdown: string, heading: string): string {
  const level = /^#+/.exec(heading)?.[0].length ?? 0;
  const title = heading.slice(level).trim();
  const tokens = markdownTokens(markdown);
  const at = tokens.findIndex((t, i) => t.type === 'heading_open' && t.tag === `h${level}` && tokens[i + 1]!.content === title);
  if (at < 0) throw new Error(`no heading "${heading}"`);
  const next = tokens.findIndex((t, i) => i > at && t.type === 'heading_open' && Number(t.tag.slice(1)) <= level);
  const lines = markdown.split('\n');
  return lines.slice(tokens[at]!.map![0], next < 0 ? undefined : tokens[next]!.map![0]).join('\n');
}

/** The contents of the fenced code blocks of `markdown` whose info string is `lang` (every block without it), in order. */
export function fencedBlocks(markdown: string, lang?: string): string[] {
  return markdownTokens(markdown)
    .filter((t) => t.type === 'fence' && (lang === undefined || t.info.trim() === lang))
    .map((t) => t.content);
}
