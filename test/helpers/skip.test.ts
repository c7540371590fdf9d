/**
 * The skip gate (skip.ts, root-hooks.ts) on a suite of its own, run as `npm test` runs mocha, in a
 * process of its own: lenient by default, strict under MME_STRICT=1 or with MME_ALLOW_SKIP, and
 * unknown ids or values refused.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { type CommandRun, runCommand } from '../../harness/run-command';
import { skipPolicy } from './skip';

const kRoot = path.resolve(__dirname, '../../..');
const kMocha = path.join(kRoot, 'node_modules', 'mocha', 'bin', 'mocha.js');

/** The gate's suite under `env`; the caller's own MME_STRICT and MME_ALLOW_SKIP (CI sets one) are not passed on. */
async function runSuite(env: Record<string, string> = {}): Promise<CommandRun & { out: string }> {
  const r = await runCommand(
    process.execPath,
    [
      kMocha,
      '--no-config',
      '--require',
      'dist/test/helpers/root-hooks.js',
      '--reporter',
      'spec',
      'dist/test/helpers/skip-gate-suite.js',
    ],
    { cwd: kRoot, env: { MME_STRICT: undefined, MME_ALLOW_SKIP: undefined, SKIP_GATE_CASE: undefined, ...env } },
  );
  return { ...r, out: `${r.stdout}${r.stderr}` };
}

const kSkipped = [
  'skip gate suite needs nginx',
  'skip gate suite needs podman builds the image',
  'skip gate suite needs podman runs the image',
];

describe('skip gate', () => {
  it('by default passes, and after the summary lists each test that did not run with why and the command that brings it', async () => {
    const r = await runSuite();
    assert.equal(r.code, 0, r.out);
    const block = r.stdout.slice(r.stdout.indexOf('1 passing'));
    assert.match(block, /3 tests did not run on this machine/, r.out);
    for (const title of kSkipped) assert.ok(block.includes(title), `${title} in the list:\n${r.out}`);
    assert.match(block, /\[nginx\] needs nginx; to run: apt-get install nginx/);
    assert.match(block, /\[podman\] needs podman .*; to run: apt-get install podman/);
    assert.match(block, /no podman on this pretend machine/, 'the reason the test gave');
  });

  it('under MME_STRICT=1 fails, naming each test that did not run and its id', async () => {
    const r = await runSuite({ MME_STRICT: '1' });
    assert.notEqual(r.code, 0, r.out);
    assert.match(r.out, /3 tests did not run under MME_STRICT=1; .* MME_ALLOW_SKIP=nginx,podman/);
    for (const title of kSkipped) assert.ok(r.out.includes(title), `${title} named:\n${r.out}`);
  });

  it('with MME_ALLOW_SKIP, fails on the ids it does not name and lists those it does', async () => {
    const partly = await runSuite({ MME_ALLOW_SKIP: 'nginx' });
    assert.notEqual(partly.code, 0, partly.out);
    assert.match(partly.out, /2 tests did not run under MME_STRICT=1; .* MME_ALLOW_SKIP=nginx,podman/);
    assert.match(partly.out, /1 tests did not run on this machine[^]*skip gate suite needs nginx/);
    const all = await runSuite({ MME_STRICT: '1', MME_ALLOW_SKIP: 'nginx, podman' });
    assert.equal(all.code, 0, all.out);
    assert.match(all.out, /3 tests did not run on this machine/);
  });

  it('fails on a test skipped without a reason, even by default', async () => {
    const r = await runSuite({ SKIP_GATE_CASE: 'bare' });
    assert.notEqual(r.code, 0, r.out);
    assert.match(r.out, /1 tests skipped without a reason .*\n\s+skip gate suite skips with no reason/);
  });

  it('refuses unknown ids in MME_ALLOW_SKIP and in skipBecause, and values of MME_STRICT other than 0 and 1', async () => {
    const allow = await runSuite({ MME_ALLOW_SKIP: 'nginx,ngnix' });
    assert.notEqual(allow.code, 0, allow.out);
    assert.match(allow.out, /MME_ALLOW_SKIP names unknown skip ids ngnix; known: nginx, haproxy/);
    const skip = await runSuite({ SKIP_GATE_CASE: 'unknown-id' });
    assert.notEqual(skip.code, 0, skip.out);
    assert.match(skip.out, /skipBecause: unknown skip id ngnix/);
    assert.throws(() => skipPolicy({ MME_STRICT: 'yes' }), /MME_STRICT must be 1 .* or 0 .*, not yes/);
    assert.deepEqual(skipPolicy({}), { strict: false, allowed: new Set() });
    assert.deepEqual(skipPolicy({ MME_STRICT: '0', MME_ALLOW_SKIP: 'kubectl' }), {
      strict: false,
      allowed: new Set(['kubectl']),
    });
  });
});
