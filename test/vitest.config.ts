// Vitest settings (kept under test/ so the top level stays as the layout fixes it).
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    root: new URL('..', import.meta.url).pathname,
    include: ['test/**/*.test.ts'],
    // Each file in its own process: lmdb-js is not safe across worker threads (lmdb-js #48).
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 30_000,
    // Soaks and long fault runs are opt-in.
    exclude: process.env.PEEKLOCK_LONG ? [] : ['test/**/*.long.test.ts'],
  },
});
