// typescript-eslint's recommended type-checked rules, for the bugs the compiler does not see: above
// all a promise nobody handles (a rejection that goes nowhere leaves a request hanging or state half
// updated, then ends the process: src/unhandled-rejection.ts), `any` leaking out of parsed input
// into typed code, and template strings that print "[object Object]" in an error message.
//
// Left off, and why:
// - no-unsafe-enum-comparison: the ONNX and protobuf readers compare numbers decoded from the wire
//   with the generated enums on purpose; a wire number is not of the enum type until it is checked.
// - in test/, harness/ and scripts/: the no-unsafe-* family: they read the server's JSON answers
//   (`any`) and assert or print their shape; typing every answer would add casts, not checks.
// - no-require-imports: a CommonJS project; the few require() calls load a user's handler or a
//   package's own files by a path known only at run time.
// - require-await: an async method that implements a Promise-returning interface needs no await.
import tseslint from 'typescript-eslint';

// test/ compares no measured duration with a bound (the rule's file says what it reports, and why).
import timing from './test/lint/no-timed-assertions.cjs';

const files = ['src/**/*.ts', 'harness/**/*.ts', 'test/**/*.ts', 'scripts/**/*.ts'];

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'bench-results/**', 'model-store/**'] },
  ...tseslint.configs.recommendedTypeChecked.map((c) => ({ ...c, files })),
  {
    files,
    languageOptions: {
      parserOptions: { project: './tsconfig.json', tsconfigRootDir: import.meta.dirname },
    },
    // Some files name rules this config does not load; they are not errors here.
    linterOptions: { reportUnusedDisableDirectives: 'off' },
    rules: {
      '@typescript-eslint/no-unsafe-enum-comparison': 'off',
      '@typescript-eslint/no-require-imports': 'off',
      '@typescript-eslint/require-await': 'off',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' },
      ],
    },
  },
  {
    files: ['test/**/*.ts', 'harness/**/*.ts', 'scripts/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/restrict-template-expressions': 'off',
    },
  },
  { files: ['test/**/*.ts'], plugins: { timing }, rules: { 'timing/no-timed-assertions': 'error' } },
  {
    // Issue 44: the worker mode is a type. Only the two host policies (and kModeTraits beside their
    // interface) know which mode they are; everything else asks them, so a third mode is one file.
    files: ['src/**/*.ts'],
    ignores: ['src/server/hosts/{host,dedicated,shared}-policy.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: 'BinaryExpression[operator=/^[!=]==?$/] > Literal[value=/^(shared|dedicated)$/]',
          message: 'Ask the host policy (or kModeTraits) instead of comparing worker modes.',
        },
        {
          selector: 'SwitchCase > Literal[value=/^(shared|dedicated)$/]',
          message: 'Ask the host policy (or kModeTraits) instead of switching on worker modes.',
        },
      ],
    },
  },
);
