/**
 * Issue 21, "after 2^32 requests every invoke fails, then the server exits": job and batch ids were
 * u32 on the wire, so request 2^32 threw inside dispatch(), its job stayed running, and its timeout
 * rejected a promise nobody handled. Real servers and workers; a seam (IdAllocator.skipTo) starts
 * the counters at the boundary instead of counting 2^32 requests up to it.
 */
import assert from 'node:assert/strict';
import { IdAllocator, MAX_U32, MAX_WIRE_ID } from '../../src/protocol/ids';
import { batchIds } from '../../src/server/models/dispatcher';
import { jobIds } from '../../src/server/jobs/job';
import { mlpForward, mlpModel, writeModelDir } from '../../harness/onnx-models';
import { assertRowsClose } from '../helpers/assert-close';
import { invoke, loadModel } from '../../harness/http-requests';
import { startTestServer, type TestServer } from '../../harness/test-server';
import { streamInvoke } from '../../harness/stream-client';

const spec = (seed: number) => ({ sizes: [4, 8, 3], seed });
const rows = [[1, 2, 3, 4]];

/** Streams "a;" then answers "done": its ids travel in Chunk and ChunkAck frames too. */
const streams = `exports.streaming = true;
exports.handle = async (requests, ctx) => {
  ctx.sendIntermediate(0, 'a;');
  return ['done'];
};
`;

async function load(t: TestServer, name: string, seed: number, extra: Record<string, unknown> = {}): Promise<void> {
  const res = await loadModel(t, name, writeModelDir(t.store, name, mlpModel(spec(seed))), extra);
  assert.equal(res.status, 200, res.text);
}

async function assertAnswers(t: TestServer, name: string, seed: number): Promise<void> {
  const res = await invoke(t, name, { inputs: { input: rows } });
  assert.equal(res.status, 200, res.text);
  assertRowsClose(res.body.outputs.output, mlpForward(spec(seed), rows), name);
}

describe('long uptime: ids that frames carry never run out (issue 21)', function () {
  this.timeout(120_000);

  it('IdAllocator wraps after its max to 1, skips the ids still in use, and says so when none is free', () => {
    const ids = new IdAllocator(5);
    ids.skipTo(4);
    assert.deepEqual([ids.next(), ids.next(), ids.next()], [4, 5, 1]);
    const held = new Set([2, 3, 5]);
    assert.deepEqual([ids.next((id) => held.has(id)), ids.next((id) => held.has(id))], [4, 1]);
    assert.throws(() => ids.next(() => true), /every id from 1 to 5 is in use/);
  });

  for (const mode of ['dedicated', 'shared'] as const) {
    describe(`worker_mode=${mode}`, () => {
      let t: TestServer;
      before(async () => {
        t = await startTestServer(`worker_mode=${mode}\nshared_workers=1\nmodel_cache=off`);
        await load(t, 'mlp', 1);
        const streamDir = writeModelDir(t.store, 'streams', mlpModel(spec(2)), { 'handler.js': streams });
        const res = await loadModel(t, 'streams', streamDir, { handler: 'handler.js' });
        assert.equal(res.status, 200, res.text);
      });
      after(async () => t.close());

      it('after 2^32 requests invokes still succeed and the server stays up (one by one, coalesced, streamed)', async () => {
        jobIds.skipTo(2 ** 32 - 3);
        batchIds.skipTo(2 ** 32 - 2);
        for (let i = 0; i < 4; i++) await assertAnswers(t, 'mlp', 1);
        // Several at once: batch_size 1 with a backlog sends them in one frame (independent answers).
        await Promise.all(Array.from({ length: 10 }, () => assertAnswers(t, 'mlp', 1)));
        const streamed = await streamInvoke(
          `${t.url}/models/streams/invoke`,
          JSON.stringify({ inputs: { input: rows } }),
        );
        assert.equal(streamed.status, 200);
        assert.equal(Buffer.concat(streamed.chunks).toString(), 'a;done');
        const next = jobIds.next();
        assert.ok(next > 2 ** 32 && next < 2 ** 32 + 100, `job ids went on past 2^32 (${next})`);
      });

      it('job and batch ids wrap after 2^53 − 1, and the dispatcher keeps serving across the wrap', async () => {
        jobIds.skipTo(MAX_WIRE_ID - 2);
        batchIds.skipTo(MAX_WIRE_ID - 1);
        for (let i = 0; i < 5; i++) await assertAnswers(t, 'mlp', 1);
        assert.ok(jobIds.next() < 10 && batchIds.next() < 10, 'both counters started again from 1');
      });

      it('a batch whose frame cannot be encoded fails with 500 alone, leaves nothing running, and the worker serves the next', async () => {
        // Past what the codec writes: encodeFrame throws inside dispatch(), as id 2^32 did before.
        batchIds.skipTo(MAX_WIRE_ID + 1);
        const failed = await invoke(t, 'mlp', { inputs: { input: rows } });
        assert.equal(failed.status, 500, failed.text);
        assert.equal(failed.body.errorCode, 'MME_ERR_INTERNAL');
        assert.match(failed.body.message, /could not be sent to its worker/);
        assert.ok(
          t.logs.some((l) =>
            /a batch of 1 could not be sent to its worker: RangeError: an id must be an integer/.test(l),
          ),
          'the log has the cause',
        );
        const model = t.server.manager.registry.get('mlp');
        assert.equal(model.inFlightRequests, 0, 'no job is left running');
        assert.deepEqual(
          model.workers.map((w) => w.inFlightBatches),
          [0],
          'the worker holds nothing of it',
        );
        await assertAnswers(t, 'mlp', 1);
      });
    });
  }

  it("a shared host's slots wrap after 2^32 − 1 and skip the slots its models still hold", async () => {
    const t = await startTestServer('worker_mode=shared\nshared_workers=1\nmodel_cache=off');
    try {
      await load(t, 'a', 1);
      const slotOf = (name: string) => t.server.manager.registry.get(name).workers[0].slotId;
      t.server.manager.workers.hosts!.hosts[0].policy.slotIds.skipTo(MAX_U32);
      await load(t, 'b', 2);
      await load(t, 'c', 3);
      assert.deepEqual(['a', 'b', 'c'].map(slotOf), [1, MAX_U32, 2], 'c wrapped past the slot a holds');
      await Promise.all([assertAnswers(t, 'a', 1), assertAnswers(t, 'b', 2), assertAnswers(t, 'c', 3)]);
    } finally {
      await t.close();
    }
  });
});
