// Lint is here for one class of bug the compiler does not see: a promise nobody handles. A rejection
// that goes nowhere leaves a request hanging or state half-updated, and then ends the process
// (src/unhandled-rejection.ts). Only these two type-aware rules run, so the lint stays fast and
// every finding is one of those bugs.
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'bench-results/**', 'model-store/**'] },
  {
    files: ['src/**/*.ts', 'harness/**/*.ts', 'test/**/*.ts', 'scripts/**/*.ts'],
    languageOptions: {
      parser: tseslint.parser,
      parserOptions: { project: './tsconfig.json', tsconfigRootDir: import.meta.dirname },
    },
    plugins: { '@typescript-eslint': tseslint.plugin },
    // Some files name rules this config does not load (e.g. no-explicit-any); they are not errors here.
    linterOptions: { reportUnusedDisableDirectives: 'off' },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
    },
  },
);
