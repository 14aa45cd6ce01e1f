// The examples of the README and the manual are files that run: the vitest example of docs/testing-with-peeklock.md
// is test/readme/orders.example.test.ts (run by npm test), its globalSetup recipe is test/readme/recipe/ (run
// against the packed package by test/install/packed-tarball.test.ts), the README's .NET snippet is the marked part
// of test/dotnet/Peeklock.DotNet.Tests/Data/ReadmeExample.cs (run by test/protocol/dotnet-sdk.test.ts), and the
// Proton transaction of docs/messaging.md is test/protocol/proton_txn_example.py (run by
// test/protocol/proton-transactions.test.ts). This keeps the pages' copies identical to them.

import { describe, expect, it } from 'vitest';
import { docSection, fencedBlocks, readDoc as read } from '../helpers/docs.js';

describe('docs/testing-with-peeklock.md', () => {
  const blocks = (): string[] => fencedBlocks(docSection(read('docs/testing-with-peeklock.md'), '# Testing with peeklock'), 'ts');

  it('shows the vitest example exactly as test/readme/orders.example.test.ts', () => {
    expect(blocks()[0]).toBe(read('test/readme/orders.example.test.ts'));
  });

  it('shows the globalSetup recipe exactly as the files under test/readme/recipe/', () => {
    expect(blocks()[1]).toBe(read('test/readme/recipe/vitest.config.ts'));
    expect(blocks()[2]).toBe(read('test/readme/recipe/orders.recipe.ts'));
    expect(blocks()).toHaveLength(3);
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

describe('the README .NET snippet', () => {
  it('shows the marked parts of test/dotnet/Peeklock.DotNet.Tests/Data/ReadmeExample.cs verbatim', () => {
    const block = fencedBlocks(docSection(read('README.md'), '## Connecting'), 'csharp');
    expect(block).toEqual([markedParts(read('test/dotnet/Peeklock.DotNet.Tests/Data/ReadmeExample.cs'))]);
  });
});

describe('the Proton transaction of docs/messaging.md', () => {
  it('shows test/protocol/proton_txn_example.py verbatim', () => {
    const block = fencedBlocks(docSection(read('docs/messaging.md'), '## Transactions'), 'python');
    expect(block).toEqual([read('test/protocol/proton_txn_example.py')]);
  });
});
