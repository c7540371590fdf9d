/**
 * The codec findings of the boundary review, each against a real server with a batching model, in
 * dedicated and in shared mode: the hostile request fails alone with a bounded 400, the honest
 * request batched beside it gets exactly its solo answer, and no worker or host is replaced.
 */
import assert from 'node:assert/strict';
import { OIP_MEDIA_TYPE } from '../../src/oip/binary-body';
import { mlpModel, writeModelDir } from '../../harness/onnx-models';
import { deep, npyBody as npy } from '../../harness/boundary/bytes';
import { workerPidsOf } from '../../harness/process-probes';
import { type JsonResponse, loadModel, request } from '../../harness/http-requests';
import { startTestServer, type TestServer } from '../../harness/test-server';

const kMlp = { sizes: [4, 8, 3], seed: 5 };
const kHonest = JSON.stringify({
  inputs: {
    input: [
      [1, 2, 3, 4],
      [0.5, -1, 0, 2],
    ],
  },
});
const kBodyLimit = 64 * 1024;

for (const mode of ['dedicated', 'shared'] as const) {
  describe(`the boundary's codec findings, ${mode} workers, batch_size=2`, function () {
    let t: TestServer;
    let pids: number[];
    let solo: string;

    function post(
      body: string | Buffer,
      contentType: string,
      route = '/models/m/invoke',
      headers: Record<string, string> = {},
    ): Promise<JsonResponse> {
      return request(`${t.url}${route}`, {
        method: 'POST',
        body,
        headers: { 'content-type': contentType, ...headers },
      });
    }

    /** The hostile body and an honest one as one batch of two: both are in flight before either answers. */
    async function beside(hostile: () => Promise<JsonResponse>): Promise<JsonResponse> {
      const batches = t.server.manager.registry.get('m').stats.batches;
      const [bad, good] = await Promise.all([hostile(), post(kHonest, 'application/json')]);
      assert.equal(good.status, 200, good.text);
      assert.equal(good.text, solo, 'the honest caller got another answer than its own');
      assert.equal(t.server.manager.registry.get('m').stats.batches - batches, 1, 'the two requests ran as one batch');
      return bad;
    }

    function assertBounded400(res: JsonResponse, message: RegExp): void {
      assert.equal(res.status, 400, res.text.slice(0, 500));
      assert.ok(res.text.length <= kBodyLimit, `a ${res.text.length}-byte error body`);
      // /v2 answers OIP's {"error"}, the rest MMS's {"message"}.
      assert.match(res.body.message ?? res.body.error, message);
    }

    before(async () => {
      t = await startTestServer(
        mode === 'shared' ? 'worker_mode=shared\nshared_workers=1\nmodel_cache=off' : 'model_cache=off',
      );
      const loaded = await loadModel(t, 'm', writeModelDir(t.store, 'm', mlpModel(kMlp)), {
        batch_size: 2,
        max_batch_delay: 30_000,
      });
      assert.equal(loaded.status, 200, loaded.text);
      // Solo: a batch of one fills only with a partner, so the solo answer comes from two honest requests.
      const [a, b] = await Promise.all([post(kHonest, 'application/json'), post(kHonest, 'application/json')]);
      assert.equal(a.text, b.text);
      solo = a.text;
      pids = workerPidsOf(process.pid);
      assert.ok(pids.length > 0);
    });
    afterEach(() => {
      assert.deepEqual(workerPidsOf(process.pid), pids, 'a worker or host was replaced');
    });
    after(async () => {
      await t.close();
    });

    it('a malformed .npy body (<U0, shape (1, 4), no data) batched with an honest request no longer swaps their answers', async () => {
      const bad = await beside(() => post(npy('<U0', '1, 4', Buffer.alloc(0)), 'application/x-npy'));
      assertBounded400(bad, /dtype '<U0', a string of no characters/);
    });

    it('a .npy body declaring (1000000, 4) from 128 bytes is 400 and its batch runs only the honest rows', async () => {
      // <U0 is what made the million rows free: with any item size the bytes must match the shape.
      assertBounded400(
        await beside(() => post(npy('<U0', '1000000, 4', Buffer.alloc(128)), 'application/x-npy')),
        /a string of no characters/,
      );
      assertBounded400(
        await beside(() => post(npy('<f4', '1000000, 4', Buffer.alloc(128)), 'application/x-npy')),
        /4000000 elements, more than the \d+-byte body can hold/,
      );
    });

    it('6 MB of 0x01 as text/csv gets a 400 under 64 KiB, and two of them batched together break nothing', async () => {
      // Four columns, as the model takes, so the first cell is parsed and quoted.
      const junk = Buffer.concat([Buffer.alloc(6_000_000, 1), Buffer.from(',1,2,3')]);
      const [one, two] = await Promise.all([post(junk, 'text/csv'), post(junk, 'text/csv')]);
      for (const res of [one, two])
        assertBounded400(res, /\(6000000 characters\) at row 1, column 1, which is not a number/);
      assertBounded400(await beside(() => post(junk, 'text/csv')), /which is not a number/);
    });

    it('JSON nested 200 000 deep and v2 data nested deep are 400, not 500', async () => {
      assertBounded400(await beside(() => post(deep(200_000), 'application/json')), /nested deeper than 64 levels/);
      const v2 = `{"inputs": [{"name": "input", "shape": [1, 4], "datatype": "FP32", "data": ${deep(200_000)}}]}`;
      assertBounded400(
        await beside(() => post(v2, 'application/json', '/v2/models/m/infer')),
        /nested deeper than 64 levels/,
      );
    });

    it('npy <U1 holding code point 0x110000 and npy <U300000 are 400, not 500', async () => {
      const beyond = Buffer.alloc(16);
      beyond.writeUInt32LE(0x110000);
      assertBounded400(
        await beside(() => post(npy('<U1', '1, 4', beyond), 'application/x-npy')),
        /code point 0x110000/,
      );
      const wide = Buffer.alloc(4 * 300_000 * 4, 0);
      for (let i = 0; i < wide.length; i += 4) wide.writeUInt32LE(0x31, i);
      assertBounded400(
        await beside(() => post(npy('<U300000', '1, 4', wide), 'application/x-npy')),
        /has element "1{100}"… \(300000 characters\), but the model expects numbers/,
      );
    });

    it('v2 outputs named "__proto__" or "toString", and a datatype named "constructor", are 400, not 500', async () => {
      const input = { name: 'input', shape: [1, 4], datatype: 'FP32', data: [1, 2, 3, 4] };
      for (const name of ['__proto__', 'toString']) {
        assertBounded400(
          await beside(() =>
            post(JSON.stringify({ inputs: [input], outputs: [{ name }] }), 'application/json', '/v2/models/m/infer'),
          ),
          /is not one of the model's outputs/,
        );
      }
      assertBounded400(
        await beside(() =>
          post(
            JSON.stringify({ inputs: [{ ...input, datatype: 'constructor' }] }),
            'application/json',
            '/v2/models/m/infer',
          ),
        ),
        /datatype "constructor" is not one of/,
      );
    });

    it('6.5 MB of raw tensor data under a shape of 4 elements is refused at its shape, before any is read', async () => {
      const empties = Buffer.alloc(6_500_000);
      const header = Buffer.from(
        JSON.stringify({
          inputs: [
            { name: 'input', shape: [1, 4], datatype: 'FP32', parameters: { binary_data_size: empties.length } },
          ],
        }),
      );
      const res = await beside(() =>
        post(Buffer.concat([header, empties]), 'application/octet-stream', '/v2/models/m/infer', {
          'inference-header-content-length': String(header.length),
        }),
      );
      assertBounded400(res, /6500000 bytes of FP32 data, but its shape \[1, 4\] needs 4 elements/);
      const asBody = await beside(() =>
        post(Buffer.concat([header, empties]), `${OIP_MEDIA_TYPE};json-header-size=${header.length}`),
      );
      assertBounded400(asBody, /6500000 bytes of FP32 data/);
    });
  });
}
