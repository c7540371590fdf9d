/**
 * The lint rule that keeps timed assertions out of test/ (no-timed-assertions.cjs, run by `npm run
 * lint` on every test file): each way a test could compare a measured duration is reported, and
 * what is not a measured duration is not.
 */
import path from 'node:path';
import { RuleTester } from 'eslint';
import tseslint from 'typescript-eslint';
import { kRepoRoot } from '../../harness/repo-root';

const { rules } = require(path.join(kRepoRoot, 'test', 'lint', 'no-timed-assertions.cjs')) as {
  rules: Record<string, Parameters<RuleTester['run']>[1]>;
};

const tester = new RuleTester({ languageOptions: { parser: tseslint.parser } });
const timed = (code: string) => ({ code, errors: [{ messageId: 'timed' }] });

tester.run('no-timed-assertions', rules['no-timed-assertions'], {
  valid: [
    // Bounds on counts, configured durations, virtual time and deadlines that are not compared in a test.
    'assert.ok(pings.length >= 10);',
    'assert.ok(kDefaultLimits.keepAliveTimeoutMs > 60_000);',
    'const clock = new VirtualClock(); clock.advance(2999); assert.ok(clock.now() < 3000);',
    'const deadline = Date.now() + 5000; await waitFor(() => done, "done");',
    'const started = Date.now(); log(started); assert.equal(seen, 3);',
    'let n = 0; n = items.length; assert.ok(n > 0);',
  ],
  invalid: [
    timed('const t0 = Date.now(); await work(); assert.ok(Date.now() - t0 < 10_000);'),
    timed('const t0 = performance.now(); const tookMs = performance.now() - t0; assert.ok(tookMs >= 300);'),
    timed('const t0 = process.hrtime.bigint(); assert.ok(process.hrtime.bigint() - t0 > 1_000_000n);'),
    timed('const [s] = process.hrtime(); assert.ok(s > 3);'),
    timed('const t0 = Date.now(); let later = 0; later = Date.now() - t0; assert.ok(later > 3);'),
    timed('const start = new Date(); assert.ok(new Date().getTime() - start.getTime() < 100);'),
    timed('const p = await timedPing(port); assert.ok(p.answerMs < 500);'),
    timed('const r = await probes.timedRequest(url); assert.ok(r.ms <= 200);'),
    timed('function since(t) { return Date.now() - t; } const t0 = Date.now(); assert.ok(Date.now() > t0 + 50);'),
  ],
});
