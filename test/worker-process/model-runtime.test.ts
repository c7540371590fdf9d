import assert from 'node:assert/strict';
import { addModel, writeModelDir } from '../../harness/onnx-models';
import { invoke, loadModel, request } from '../../harness/http-requests';
import { startTestServer, type TestServer } from '../../harness/test-server';

/** Throws (or rejects with, or returns) what the request names: values no JSON or String() can show. */
const hostileThrows = `
function value(kind) {
  switch (kind) {
    case 'circular': { const e = { code: 'BAD' }; e.self = e; return e; }
    case 'bigint': return 10n;
    case 'symbol': return Symbol('s');
    case 'null-prototype': return Object.create(null);
    case 'circular-message': { const m = {}; m.m = m; return { message: m, status: Symbol('x') }; }
    case 'throwing-getters': return Object.defineProperty(new Error('x'), 'message', { get() { throw new Error('getter'); } });
    case 'proxy': return new Proxy({}, { get() { throw new Error('trap'); }, getPrototypeOf() { throw new Error('trap'); } });
    case 'huge': return 'x'.repeat(1e6);
    case 'status-string': return { message: 'teapot', status: '418' };
  }
}
exports.handle = async (requests) => {
  const cmd = JSON.parse(requests[0].body.toString());
  if (cmd.ok) return requests.map(() => JSON.stringify({ pid: process.pid }));
  if (cmd.returned) return requests.map(() => value(cmd.kind));
  throw value(cmd.kind);
};
`;

const kKinds = [
  'circular',
  'bigint',
  'symbol',
  'null-prototype',
  'circular-message',
  'throwing-getters',
  'proxy',
  'huge',
  'status-string',
];
/** Returned, a value is a result unless it is an Error; these are Errors, or results no serialiser can write. */
const kReturnedFailures = new Set(['circular', 'bigint', 'throwing-getters', 'proxy']);

describe("worker process: a handler's failures", function () {
  this.timeout(120_000);

  for (const mode of ['dedicated', 'shared'] as const) {
    describe(`worker_mode=${mode}`, () => {
      let t: TestServer;
      before(async () => {
        t = await startTestServer(`worker_mode=${mode}\nshared_workers=1\nmodel_cache=off`);
        for (const name of ['hostile', 'bystander']) {
          const res = await loadModel(
            t,
            name,
            writeModelDir(t.store, name, addModel(), { 'handler.js': hostileThrows }),
          );
          assert.equal(res.status, 200, res.text);
        }
      });
      after(async () => t.close());

      it('fails the request with a bounded message whatever the handler throws, and its process keeps serving', async () => {
        const pid = (await invoke(t, 'bystander', { ok: true })).body.pid;
        for (const kind of kKinds) {
          for (const returned of kReturnedFailures.has(kind) ? [false, true] : [false]) {
            const [res, beside] = await Promise.all([
              invoke(t, 'hostile', { kind, returned }),
              invoke(t, 'bystander', { ok: true }),
            ]);
            const what = `${kind}${returned ? ' (returned)' : ''}`;
            assert.equal(res.status, kind === 'status-string' ? 418 : 500, `${what}: ${res.text.slice(0, 200)}`);
            // A handler's own 4xx is the client's mistake; anything else it throws is the model's.
            assert.equal(
              res.body.errorCode,
              kind === 'status-string' ? 'MME_ERR_INVALID_INPUT' : 'MME_ERR_MODEL_ERROR',
              what,
            );
            assert.ok(res.text.length < 10_000, `${what}: ${res.text.length} bytes`);
            assert.equal(beside.status, 200, `${what}: the model beside it: ${beside.text.slice(0, 200)}`);
          }
        }
        assert.match((await invoke(t, 'hostile', { kind: 'circular' })).body.message, /JSON cannot show/);
        assert.equal((await invoke(t, 'bystander', { ok: true })).body.pid, pid, 'no process was replaced');
        assert.equal((await request(`${t.managementUrl}/models/hostile`)).body.workers[0].status, 'READY');
      });
    });
  }
});
