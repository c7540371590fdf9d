/**
 * docs/handlers.md's complete handler example (`iris`), made and invoked as the page says, under
 * the CLI server with decode_input_request=true (npm start's config.properties) and =false (the
 * image's docker/config.properties): the same handler must answer the same in both.
 * test/e2e/docker-image.test.ts runs it in the image too.
 */
import assert from 'node:assert/strict';
import { bash, codeBlocks, makeIrisExample } from '../helpers/docs-examples';
import { startCliServer } from '../../harness/cli-server';
import { request } from '../../harness/http-requests';
import { tempDir } from '../../harness/test-server';

describe("docs/handlers.md's iris handler example", () => {
  for (const decode of [true, false]) {
    it(`answers the page's curl command as shown, and a bad body with its own 400, with decode_input_request=${decode}`, async () => {
      const dir = tempDir('mme-iris-');
      const store = await makeIrisExample(dir);
      const s = await startCliServer(`decode_input_request=${decode}`, { store });
      try {
        const [, invoke] = codeBlocks('docs/handlers.md', 'sh');
        const [command, shown] = invoke.trim().split('\n');
        assert.match(shown, /^# \{"label":"setosa","probability":\.\.\.\}$/);
        const run = await bash(
          command
            .replace('http://127.0.0.1:8080', s.url.replace(/\/$/, ''))
            .replace(/^curl /, 'curl -sS --fail-with-body '),
          dir,
        );
        assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);
        const answer = JSON.parse(run.stdout) as { label: string; probability: number };
        assert.equal(answer.label, 'setosa');
        assert.ok(answer.probability > 0 && answer.probability <= 1, run.stdout);

        const bad = await request(`${s.url}/models/iris/invoke`, { method: 'POST', json: { features: [1, 2] } });
        assert.equal(bad.status, 400, bad.text);
        assert.deepEqual(bad.body, {
          code: 400,
          type: 'BadRequestException',
          message: 'send {"features": [4 numbers]}',
          errorCode: 'MME_ERR_INVALID_INPUT',
        });
      } finally {
        await s.stop();
      }
    });
  }
});
