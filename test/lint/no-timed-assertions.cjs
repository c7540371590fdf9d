// test/ compares no measured duration with a bound: that fails on a busy machine and proves nothing
// on an idle one. Tests wait for events, run on the virtual clock (test/helpers/virtual-clock.ts),
// or leave the figure to a bench (scripts/bench) or a long run (npm run soak, npm run load).
//
// The rule reports an ordering comparison (< <= > >=) that reads the wall clock, itself or through
// variables: Date.now(), performance.now(), process.hrtime(.bigint)(), new Date(), or a harness
// function that measures (its name begins with `timed`, as timedPing); a variable counts when its
// initial value or any value assigned to it does, so `Date.now() - t0 < 10_000`,
// `const tookMs = Date.now() - t0; assert.ok(tookMs >= 300)` and `(await timedPing(p)).answerMs < 500`
// are all reported. test/lint/no-timed-assertions.test.ts holds it to these cases.

const kClockObjects = ['Date', 'performance', 'process', 'hrtime'];

/** A call or construction that reads the clock, or a harness measurement. */
function isClockRead(node) {
  if (node.type === 'NewExpression') return node.callee.type === 'Identifier' && node.callee.name === 'Date';
  if (node.type !== 'CallExpression') return false;
  const callee = node.callee;
  if (callee.type === 'Identifier') return /^timed[A-Z]/.test(callee.name);
  if (callee.type !== 'MemberExpression') return false;
  if (callee.property.type === 'Identifier' && /^timed[A-Z]/.test(callee.property.name)) return true;
  const object = callee.object.type === 'MemberExpression' ? callee.object.property : callee.object;
  return (
    callee.property.type === 'Identifier' &&
    ['now', 'hrtime', 'bigint'].includes(callee.property.name) &&
    object.type === 'Identifier' &&
    kClockObjects.includes(object.name)
  );
}

/** Every expression a variable is given: its initial value and the right side of each assignment. */
function valuesOf(variable) {
  const values = new Set(variable.defs.filter((d) => d.node.type === 'VariableDeclarator').map((d) => d.node.init));
  for (const ref of variable.references) if (ref.writeExpr) values.add(ref.writeExpr);
  return [...values];
}

/** Whether `node` reads the clock, itself or through the values of the variables it reads. */
function readsClock(node, scope, seen) {
  if (!node || typeof node.type !== 'string' || seen.has(node)) return false;
  seen.add(node);
  if (isClockRead(node)) return true;
  if (node.type === 'Identifier') {
    for (let s = scope; s; s = s.upper) {
      const variable = s.set.get(node.name);
      if (variable) return valuesOf(variable).some((v) => readsClock(v, scope, seen));
    }
    return false;
  }
  return Object.entries(node).some(
    ([key, child]) =>
      key !== 'parent' &&
      (Array.isArray(child) ? child.some((c) => readsClock(c, scope, seen)) : readsClock(child, scope, seen)),
  );
}

/** @type {import('eslint').Rule.RuleModule} */
const noTimedAssertions = {
  meta: {
    type: 'problem',
    messages: {
      timed:
        'A wall-clock duration compared with a bound: wait for an event, use the virtual clock, or measure it in a bench.',
    },
    schema: [],
  },
  create: (context) => ({
    BinaryExpression(node) {
      if (
        ['<', '<=', '>', '>='].includes(node.operator) &&
        readsClock(node, context.sourceCode.getScope(node), new Set())
      )
        context.report({ node, messageId: 'timed' });
    },
  }),
};

module.exports = { rules: { 'no-timed-assertions': noTimedAssertions } };
