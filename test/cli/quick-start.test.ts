/**
 * The README's first command, `npm ci && npm start`: the repository's own config.properties (with
 * its relative model_store) from the repository root, only on port 0 instead of 8080.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startCli, type CliServer } from '../helpers/cli';
import { waitFor } from '../helpers/processes';
import { request, tempDir } from '../helpers/server';

// Compiled to dist/test/cli/, so the repo root is three levels up.
const kRoot = path.resolve(__dirname, '../../..');

describe('npm start (the repository config.properties, from the repository root)', () => {
  let s: CliServer;
  after(() => s?.stop());

  it('loads every example model from the relative model_store and answers the README example', async () => {
    const config = fs.readFileSync(path.join(kRoot, 'config.properties'), 'utf8').replace(/:8080\b/g, ':0');
    assert.match(config, /^model_store=model-store$/m, 'the repository config serves the relative model-store/');
    const file = path.join(tempDir('mme-quick-start-'), 'config.properties');
    fs.writeFileSync(file, config);
    s = await startCli(['--mms-config', file], {}, [], kRoot);
    const examples = fs.readdirSync(path.join(kRoot, 'model-store'), { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name).sort();
    await waitFor(async () => (await request(`${s.url}/models`)).body.models.length === examples.length, `the ${examples.length} example models to load`, 60_000, 100);
    assert.deepEqual((await request(`${s.url}/models`)).body.models.map((m: { modelName: string }) => m.modelName), examples);
    assert.ok(!s.lines.some((l) => /failed to load/.test(l)), s.lines.join('\n'));
    const res = await request(`${s.url}/models/mlp/invoke`, { method: 'POST', json: { inputs: { input: [[1, 2, 3, 4]] } } });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.outputs.output[0].length, 3);
  });
});
