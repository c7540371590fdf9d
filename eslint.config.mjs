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

// test/ compares no measured duration with a bound: that fails on a busy machine and proves nothing
// on an idle one. Tests wait for events, run on the virtual clock (test/helpers/virtual-clock.ts),
// or leave the figure to a bench (scripts/bench). The rule reports an ordering comparison (< <= > >=)
// that reads the wall clock (Date.now(), performance.now(), process.hrtime) or a variable set from
// it, as in `Date.now() - t0 < 10_000` or `const tookMs = Date.now() - t0; assert.ok(tookMs >= 300)`.
const isWallClockRead = (node) =>
  node.type === 'CallExpression' &&
  node.callee.type === 'MemberExpression' &&
  ['now', 'hrtime', 'bigint'].includes(node.callee.property.name) &&
  ['Date', 'performance', 'process', 'hrtime'].includes(
    node.callee.object.type === 'MemberExpression' ? node.callee.object.property.name : node.callee.object.name,
  );

/** Whether `node` reads the wall clock, itself or through a variable whose initial value does. */
function readsWallClock(node, scope, seen = new Set()) {
  if (!node || typeof node.type !== 'string' || seen.has(node)) return false;
  seen.add(node);
  if (isWallClockRead(node)) return true;
  if (node.type === 'Identifier') {
    for (let s = scope; s; s = s.upper) {
      const variable = s.set.get(node.name);
      if (variable)
        return variable.defs.some(
          (d) => d.node.type === 'VariableDeclarator' && readsWallClock(d.node.init, scope, seen),
        );
    }
    return false;
  }
  return Object.entries(node).some(
    ([key, child]) =>
      key !== 'parent' &&
      (Array.isArray(child) ? child.some((c) => readsWallClock(c, scope, seen)) : readsWallClock(child, scope, seen)),
  );
}

const timing = {
  rules: {
    'no-timed-assertions': {
      meta: {
        type: 'problem',
        messages: {
          timed:
            'A wall-clock duration compared with a bound: wait for an event, use the virtual clock, or measure it in a bench.',
        },
      },
      create: (context) => ({
        BinaryExpression(node) {
          if (['<', '<=', '>', '>='].includes(node.operator) && readsWallClock(node, context.sourceCode.getScope(node)))
            context.report({ node, messageId: 'timed' });
        },
      }),
    },
  },
};

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
