import { defineConfig } from 'vitest/config';

// The entities the broker starts with (else none: tests can create their own with ServiceBusAdministrationClient).
process.env.PEEKLOCK_CONFIG ??= new URL('./peeklock.json', import.meta.url).pathname;

export default defineConfig({
  test: {
    // One broker for the whole run, with the manual clock and fault injection on; each test file gets its
    // address through inject('peeklock').
    globalSetup: ['peeklock/vitest'],
    include: ['**/*.recipe.ts'],
  },
});
