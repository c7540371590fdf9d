/**
 * Every script answers --help with its usage on stdout and exit 0, and starts nothing: each runs
 * with test/helpers/no-spawn.js preloaded, which makes starting any process (a server, nginx, a
 * worker) print on stderr and fail.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { runCommand } from '../../harness/run-command';

// Compiled to dist/test/scripts/: dist is two levels up, the repository three.
const kDist = path.resolve(__dirname, '../..');
const kRoot = path.resolve(kDist, '..');
const kNoSpawn = path.join(kDist, 'test', 'helpers', 'no-spawn.js');

function jsFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
    const p = path.join(dir, d.name);
    return d.isDirectory() ? jsFiles(p) : d.name.endsWith('.js') ? [p] : [];
  });
}

/** The npm scripts' entry points, and every script that runs when started directly. */
function entryPoints(): string[] {
  const pkg = JSON.parse(fs.readFileSync(path.join(kRoot, 'package.json'), 'utf8')) as {
    scripts: Record<string, string>;
  };
  const fromNpm = Object.values(pkg.scripts).flatMap((s) =>
    [...s.matchAll(/node (dist\/(?:scripts|src\/cli)\/\S+\.js)/g)].map((m) => path.join(kRoot, m[1])),
  );
  const direct = jsFiles(path.join(kDist, 'scripts')).filter((f) =>
    fs.readFileSync(f, 'utf8').includes('require.main === module'),
  );
  return [...new Set([...fromNpm, ...direct])].sort();
}

const run = (script: string) => runCommand(process.execPath, ['--require', kNoSpawn, script, '--help'], { cwd: kRoot });

describe('scripts: --help', () => {
  const scripts = entryPoints();

  it('finds the npm scripts and the directly run ones', () => {
    for (const s of [
      'scripts/bench/all.js',
      'scripts/bench/fleet/fleet.js',
      'scripts/hardening/soak.js',
      'scripts/cache-sim/main.js',
      'scripts/plan/main.js',
      'scripts/sagemaker/deploy.js',
      'src/cli/mme-client.js',
      'scripts/docs-tables.js',
    ]) {
      assert.ok(scripts.includes(path.join(kDist, s)), `${s} is among ${scripts.length} entry points`);
    }
  });

  for (const script of scripts) {
    const name = path.relative(kDist, script);
    it(`${name} prints its usage on stdout, exits 0 and starts nothing`, async () => {
      const r = await run(script);
      assert.equal(r.stderr, '', `${name} wrote to stderr`);
      assert.equal(r.code, 0);
      assert.match(r.stdout, /^Usage:\s/);
    });
  }
});
