// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    // tsup.config.bundled_*.mjs: tsup's temporary copy of its config, there for a moment while a build runs (CI lints
    // alongside the build, and ESLint failed reading one that was gone by then).
    ignores: ['**/dist/**', '**/node_modules/**', '**/coverage/**', 'bench/results/**', 'bench/.runners/**', 'bench/.runners-test-*/**', '**/tsup.config.bundled_*'],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: { process: 'readonly', console: 'readonly', Buffer: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', setImmediate: 'readonly', setInterval: 'readonly', clearInterval: 'readonly', URL: 'readonly', AbortController: 'readonly', AbortSignal: 'readonly', NodeJS: 'readonly' },
    },
    rules: {
      // Public surfaces must stay typed; tests and internals may use `unknown` instead.
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      'no-constant-condition': ['error', { checkLoops: false }],
    },
  },
  {
    // The dashboard's page runs in the browser.
    files: ['packages/dashboard/ui/**/*.js'],
    languageOptions: {
      sourceType: 'script',
      globals: { window: 'readonly', document: 'readonly', location: 'readonly', fetch: 'readonly', URLSearchParams: 'readonly', FormData: 'readonly', EventSource: 'readonly', confirm: 'readonly', uPlot: 'readonly' },
    },
  },
  {
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { require: 'readonly', module: 'writable', __dirname: 'readonly' } },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
