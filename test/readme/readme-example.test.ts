// The README's examples are files that run: the vitest example is test/readme/orders.example.test.ts (run by npm
// test), the globalSetup recipe is test/readme/recipe/ (run against the packed package by
// test/install/packed-tarball.test.ts), the .NET snippet is the marked part of
// test/dotnet/Peeklock.DotNet.Tests/Data/ReadmeExample.cs (run by test/protocol/dotnet-sdk.test.ts). This keeps the
// README's copies identical to them.

import fs from 'node:fs';
import { describe, expect, it } from 'vitest';

const root = new URL('../../', import.meta.url);
const read = (p: string): string => fs.readFileSync(new URL(p, root), 'utf8');

/** The TypeScript code blocks of the README's "Testing with peeklock" section, in order. */
function sectionBlocks(): string[] {
  const readme = read('README.md');
  const start = readme.indexOf('\n## Testing with peeklock\n');
  expect(start).toBeGreaterThan(0);
  const end = readme.indexOf('\n## ', start + 1);
  const section = readme.slice(start, end === -1 ? undefined : end);
  return [...section.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

describe('the README testing section', () => {
  it('shows the vitest example exactly as test/readme/orders.example.test.ts', () => {
    expect(sectionBlocks()[0]).toBe(read('test/readme/orders.example.test.ts'));
  });

  it('shows the globalSetup recipe exactly as the files under test/readme/recipe/', () => {
    const blocks = sectionBlocks();
    expect(blocks[1]).toBe(read('test/readme/recipe/vitest.config.ts'));
    expect(blocks[2]).toBe(read('test/readme/recipe/orders.recipe.ts'));
    expect(blocks).toHaveLength(3);
  });
});

/** The parts of a C# file between `// README:begin` and `// README:end`, each dedented, joined by a blank line. */
function markedParts(text: string): string {
  const parts = [...text.matchAll(/^([ \t]*)\/\/ README:begin\n([\s\S]*?)^[ \t]*\/\/ README:end\n/gm)].map(([, indent, body]) =>
    body!
      .split('\n')
      .map((line) => (line.startsWith(indent!) ? line.slice(indent!.length) : line))
      .join('\n'),
  );
  expect(parts.length).toBeGreaterThan(0);
  return parts.join('\n');
}

describe('the README .NET section', () => {
  it('shows the marked parts of test/dotnet/Peeklock.DotNet.Tests/Data/ReadmeExample.cs verbatim', () => {
    const readme = read('README.md');
    const start = readme.indexOf('\n**.NET** (');
    expect(start).toBeGreaterThan(0);
    const block = /```csharp\n([\s\S]*?)```/.exec(readme.slice(start))?.[1];
    expect(block).toBe(markedParts(read('test/dotnet/Peeklock.DotNet.Tests/Data/ReadmeExample.cs')));
  });
});
