// Lint rules: typescript-eslint's recommended set, plus the house rules that keep layers and logs honest.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  // This file lives under test/ so the top level stays as the layout fixes it; basePath points at the repo.
  { basePath: '..' },
  { ignores: ['dist/**', 'node_modules/**', 'data/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['src/**/*.ts'],
    rules: {
      // Logs go through pino with structured fields.
      'no-console': 'error',
    },
  },
  {
    // One write path (issue 27): every state change is a plan run by Journal.run, which applies it once durable or
    // undoes it; a direct write would choose its own order and rollback again.
    files: ['src/broker/**/*.ts'],
    ignores: ['src/broker/journal.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: "CallExpression[callee.property.name='persist']",
          message: 'Write through Journal.run(plan): claim, ops, applied, undo (src/broker/journal.ts).',
        },
        {
          selector: "CallExpression[callee.property.name='write'][callee.object.name='store'], CallExpression[callee.property.name='write'][callee.object.property.name='store']",
          message: 'Only Journal writes to the store: return a plan and run it with Journal.run.',
        },
      ],
    },
  },
  {
    // The bin entry and the dependency rules are plain JavaScript run by Node.
    files: ['bin/**/*.js', 'test/**/*.cjs'],
    languageOptions: { globals: { process: 'readonly', module: 'writable' } },
  },
  {
    // Client programs the tests run as child processes (the snippets of the README and docs/ among them), as users write them.
    files: ['test/**/*.mjs'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly' } },
  },
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
    },
  },
);
