/**
 * The worker's boundary in-process, with a real onnxruntime session: every codec's output is a
 * checked Tensor or a bounded 400, and a request's answer does not depend on what it was batched
 * with. The same properties over real servers and every route are in
 * test/hardening/boundary-property.test.ts; these run thousands of cases in seconds.
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { isMmeError, MESSAGE_LIMIT, QUOTE_LIMIT } from '../../src/errors';
import { OIP_MEDIA_TYPE } from '../../src/oip/binary-body';
import { HandlerContext, type HandlerRequest } from '../../src/worker-process/context';
import { decoderFor } from '../../src/worker-process/content-types';
import * as handler from '../../src/worker-process/default-handler';
import { openSession, type OpenedSession } from '../../src/worker-process/session';
import { RequestBudget, Tensor } from '../../src/worker-process/tensor';
import { identityModel, mlpModel, writeModelDir } from '../../harness/onnx-models';
import { deep, npyBody as npy } from '../../harness/boundary/bytes';
import { tempDir } from '../../harness/test-server';
import { f32 } from '../../harness/float32';

const kMlp = { sizes: [4, 8, 3], seed: 7 };
const kMaxElements = 100_000;

function request(body: Buffer | string, contentType: string, accept = 'application/json'): HandlerRequest {
  const bytes = Buffer.isBuffer(body) ? body : Buffer.from(body);
  return { body: bytes, contentType, accept, headers: {}, requestId: 'r' };
}

/** Rows of 4 floats that float32 holds exactly, so every codec carries the same values. */
const row = fc.array(
  fc.integer({ min: -64, max: 64 }).map((n) => n / 4),
  { minLength: 4, maxLength: 4 },
);
const rows = fc.array(row, { minLength: 1, maxLength: 3 });

/** A generated request: `rows` is the mlp input an honest one carries, null for a hostile one. */
interface Generated {
  req: HandlerRequest;
  rows: number[][] | null;
}

/** An honest request for the mlp, in any of its codecs. */
const honest: fc.Arbitrary<Generated> = rows.chain((r) =>
  fc
    .constantFrom(
      request(JSON.stringify({ inputs: { input: r } }), 'application/json'),
      request(JSON.stringify({ instances: r }), 'application/json'),
      request(JSON.stringify(r), 'application/json'),
      request(
        JSON.stringify({ inputs: [{ name: 'input', shape: [r.length, 4], datatype: 'FP32', data: r.flat() }] }),
        'application/json',
      ),
      request(r.map((x) => x.join(',')).join('\n'), 'text/csv'),
      request(npy('<f4', `${r.length}, 4`, f32(r.flat())), 'application/x-npy'),
      request(npy('<f8', `${r.length}, 4`, Buffer.from(new Float64Array(r.flat()).buffer)), 'application/x-npy'),
    )
    .map((req) => ({ req, rows: r })),
);

const kContentTypes = ['application/json', 'text/csv', 'application/x-npy', `${OIP_MEDIA_TYPE};json-header-size=8`];

/** The attacks the issue found, their neighbours, and arbitrary input. */
const hostileRequests = fc.oneof(
  fc
    .record({
      descr: fc.constantFrom('<U0', '<f0', '<f4', '<U1', '|b1', '<i8', '>f4', '<c8', '|O8'),
      shape: fc.array(fc.constantFrom(0, 1, 4, 1_000_000, 2 ** 40), { maxLength: 3 }),
      size: fc.nat(256),
    })
    .map(({ descr, shape, size }) =>
      request(
        npy(descr, shape.join(', ') + (shape.length === 1 ? ',' : ''), Buffer.alloc(size, 1)),
        'application/x-npy',
      ),
    ),
  fc.constant(request(npy('<U1', '1, 4', Buffer.alloc(16, 0xff)), 'application/x-npy')),
  fc.constant(request(npy('<U300000', '1,', Buffer.alloc(1_200_000, 0x41)), 'application/x-npy')),
  fc.constant(request(deep(200_000), 'application/json')),
  fc.constant(
    request(
      JSON.stringify({ inputs: [{ name: 'input', shape: [1, 4], datatype: 'FP32', data: JSON.parse(deep(1000)) }] }),
      'application/json',
    ),
  ),
  fc.constant(request(Buffer.alloc(300_000, 1), 'text/csv')),
  fc
    .constantFrom('__proto__', 'constructor', 'toString')
    .map((name) => request(`{"inputs": {"${name}": [[1, 2, 3, 4]]}}`, 'application/json')),
  fc
    .constantFrom('__proto__', 'constructor', 'toString', 'FP32x')
    .map((dt) =>
      request(
        JSON.stringify({ inputs: [{ name: 'input', shape: [1, 4], datatype: dt, data: [1, 2, 3, 4] }] }),
        'application/json',
      ),
    ),
  fc
    .record({ shape: fc.array(fc.constantFrom(-1, 0, 1, 4, 1.5, 1e300, 2 ** 53), { maxLength: 3 }), n: fc.nat(8) })
    .map(({ shape, n }) =>
      request(
        JSON.stringify({ inputs: [{ name: 'input', shape, datatype: 'FP32', data: new Array(n).fill(1) }] }),
        'application/json',
      ),
    ),
  fc
    .record({ size: fc.nat(64), declared: fc.nat(64), shape: fc.array(fc.constantFrom(1, 4, 100), { maxLength: 2 }) })
    .map(({ size, declared, shape }) => {
      const header = Buffer.from(
        JSON.stringify({
          inputs: [{ name: 'input', shape, datatype: 'FP32', parameters: { binary_data_size: declared } }],
        }),
      );
      return request(
        Buffer.concat([header, Buffer.alloc(size)]),
        `${OIP_MEDIA_TYPE};json-header-size=${header.length}`,
      );
    }),
  // Not only the constants above: arbitrary bytes, arbitrary unicode (lone surrogates included) and
  // arbitrary JSON under every content type, and a .npy magic before an arbitrary header and data.
  fc
    .tuple(fc.uint8Array({ maxLength: 512 }), fc.constantFrom(...kContentTypes))
    .map(([bytes, type]) => request(Buffer.from(bytes), type)),
  fc
    .tuple(fc.string({ unit: 'binary', maxLength: 200 }), fc.constantFrom(...kContentTypes))
    .map(([text, type]) => request(text, type)),
  fc.jsonValue({ maxDepth: 4 }).map((value) => request(JSON.stringify(value), 'application/json')),
  fc.tuple(fc.string({ unit: 'binary', maxLength: 120 }), fc.uint8Array({ maxLength: 64 })).map(([header, data]) => {
    const text = Buffer.from(header);
    const length = Buffer.alloc(2);
    length.writeUInt16LE(text.length);
    return request(
      Buffer.concat([Buffer.from('\x93NUMPY\x01\x00', 'latin1'), length, text, data]),
      'application/x-npy',
    );
  }),
);

const hostile: fc.Arbitrary<Generated> = hostileRequests.map((req) => ({ req, rows: null }));

function assertBounded400(err: unknown): void {
  assert.ok(isMmeError(err), `not an MmeError: ${String(err)}`);
  assert.equal(err.status, 400, err.message);
  assert.ok(err.message.length <= MESSAGE_LIMIT + 64, `a ${err.message.length}-character message`);
}

function assertChecked(t: Tensor): void {
  assert.ok(t instanceof Tensor);
  assert.equal(
    t.data.length,
    t.dims.reduce((a, b) => a * b, 1),
  );
}

describe("the worker's tensor boundary (one validated Tensor, batches that keep answers apart)", () => {
  let mlp: OpenedSession;
  let strings: OpenedSession;
  const contexts: Array<() => Promise<void>> = [];

  async function open(name: string, bytes: Uint8Array): Promise<OpenedSession> {
    const dir = writeModelDir(tempDir(), name, bytes);
    const opened = await openSession(
      {
        modelName: name,
        modelDir: dir,
        onnxPath: `${dir}/model.onnx`,
        handlerPath: null,
        batchSize: 8,
        gpuId: -1,
        intraOpThreads: 1,
        interOpThreads: 1,
        graphOptimizationLevel: 'all',
        decodeInputRequest: true,
        concurrentBatches: false,
        maxResponseSize: 1 << 24,
        maxStreamBuffer: 1 << 20,
        maxRequestElements: kMaxElements,
        workerId: 'w',
        slot: 0,
        shared: false,
      },
      () => undefined,
    );
    contexts.push(() => opened.session.release());
    return opened;
  }

  function context(opened: OpenedSession, requests: HandlerRequest[]): HandlerContext {
    return new HandlerContext(
      {
        modelName: 'm',
        modelDir: '.',
        gpuId: -1,
        batchSize: 8,
        session: opened.session,
        inputs: opened.inputs,
        outputs: opened.outputs,
        streaming: false,
        maxStreamBuffer: 1 << 20,
        maxRequestElements: kMaxElements,
      },
      requests,
      () => undefined,
    );
  }

  /** The default handler's answers for one batch: a body, or the error that request got. */
  async function answers(opened: OpenedSession, requests: HandlerRequest[]): Promise<Array<string | Error>> {
    const ctx = context(opened, requests);
    const out = await handler.postprocess(await handler.inference(await handler.preprocess(requests, ctx), ctx), ctx);
    return out.map((o) => (o instanceof Error ? o : Buffer.from(o).toString('latin1')));
  }

  before(async () => {
    mlp = await open('mlp', mlpModel(kMlp));
    strings = await open('strings', identityModel('string'));
  });
  after(async () => {
    for (const release of contexts) await release();
  });

  it('every codec decodes an honest body into its rows, and any body into checked Tensors or a 400 of bounded size: never another error, never a tensor whose data and dims disagree', () => {
    fc.assert(
      fc.property(fc.oneof(honest, hostile), ({ req, rows }) => {
        let decoded;
        try {
          decoded = decoderFor(req.contentType).decode(
            req,
            mlp.inputs,
            new RequestBudget(kMaxElements, req.body.length),
          );
        } catch (err) {
          assert.equal(rows, null, `an honest ${req.contentType} body was refused: ${String(err)}`);
          assertBounded400(err);
          return;
        }
        for (const t of Object.values(decoded.feeds)) assertChecked(t);
        if (rows) {
          const input = decoded.feeds.input;
          assert.deepEqual(input?.dims, [rows.length, 4], `an honest ${req.contentType} body`);
          assert.deepEqual(Array.from(input.data as Float32Array), rows.flat(), `an honest ${req.contentType} body`);
        }
      }),
      { numRuns: 400 },
    );
  });

  it("a request's answer is the same alone or batched with any others, malformed ones included; an honest one is answered, a malformed one fails alone with 400", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.oneof(honest, hostile), { minLength: 2, maxLength: 6 }), async (batch) => {
        const solo = await Promise.all(batch.map(({ req }) => answers(mlp, [req]).then((a) => a[0])));
        const together = await answers(
          mlp,
          batch.map(({ req }) => req),
        );
        together.forEach((answer, i) => {
          if (batch[i].rows)
            assert.ok(
              !(solo[i] instanceof Error),
              `honest request ${i} (${batch[i].req.contentType}) refused alone: ${String(solo[i])}`,
            );
          if (solo[i] instanceof Error) {
            assertBounded400(answer);
            assert.equal((answer as Error).message, solo[i].message);
          } else {
            assert.equal(answer, solo[i], `request ${i} got another answer in the batch`);
          }
        });
      }),
      { numRuns: 120 },
    );
  });

  // Regressions named after the findings.

  it('a <U0 .npy body with shape (1, 4) and no data is refused alone; the honest request batched with it keeps its own answer', async () => {
    const attacker = request(npy('<U0', '1, 4', Buffer.alloc(0)), 'application/x-npy');
    const honestReq = request(JSON.stringify({ inputs: { input: [[1, 2, 3, 4]] } }), 'application/json');
    const [alone] = await answers(mlp, [honestReq]);
    const [bad, good] = await answers(mlp, [attacker, honestReq]);
    assertBounded400(bad);
    assert.match((bad as Error).message, /a string of no characters/);
    assert.equal(good, alone);
  });

  it('a .npy body declaring shape (1000000, 4) with 128 bytes is refused before anything is allocated for it', () => {
    const body = npy('<f4', '1000000, 4', Buffer.alloc(128));
    assert.throws(
      () =>
        decoderFor('application/x-npy').decode(
          request(body, 'application/x-npy'),
          mlp.inputs,
          new RequestBudget(10_000_000, body.length),
        ),
      (err: unknown) =>
        isMmeError(err) && err.status === 400 && /4000000 elements, more than the \d+-byte body/.test(err.message),
    );
  });

  it('max_request_elements bounds a request over all its tensors, whatever the body', () => {
    const body = JSON.stringify({
      inputs: {
        input: [
          [1, 2, 3, 4],
          [5, 6, 7, 8],
        ],
      },
    });
    assert.throws(
      () =>
        decoderFor('application/json').decode(
          request(body, 'application/json'),
          mlp.inputs,
          new RequestBudget(7, body.length),
        ),
      (err: unknown) =>
        isMmeError(err) && err.status === 400 && /8 elements.*over max_request_elements \(7\)/.test(err.message),
    );
  });

  it('6 MB of 0x01 sent as text/csv gets a 400 that quotes at most 100 characters of it', async () => {
    const [answer] = await answers(mlp, [request(Buffer.alloc(6_000_000, 1), 'text/csv')]);
    assertBounded400(answer);
    assert.ok((answer as Error).message.length < QUOTE_LIMIT * 8, (answer as Error).message.slice(0, 300));
  });

  it('JSON nested 200 000 deep, and v2 "data" nested deep, are 400 (no recursion the client decides)', async () => {
    for (const body of [
      deep(200_000),
      `{"inputs": [{"name": "input", "shape": [1, 4], "datatype": "FP32", "data": ${deep(200_000)}}]}`,
    ]) {
      const [answer] = await answers(mlp, [request(body, 'application/json')]);
      assertBounded400(answer);
      assert.match((answer as Error).message, /nested deeper than 64 levels/);
    }
  });

  it('.npy <U1 holding code point 0x110000 and <U300000 strings are 400, not 500 (no argument spread the client sizes)', async () => {
    const beyond = Buffer.alloc(4);
    beyond.writeUInt32LE(0x110000);
    const [past] = await answers(strings, [request(npy('<U1', '1, 1', beyond), 'application/x-npy')]);
    assertBounded400(past);
    assert.match((past as Error).message, /code point 0x110000/);
    const wide = Buffer.alloc(4 * 300_000);
    for (let i = 0; i < 300_000; i++) wide.writeUInt32LE(0x41, 4 * i);
    const [long] = await answers(strings, [request(npy('<U300000', '1, 1', wide), 'application/x-npy')]);
    assert.ok(typeof long === 'string', String(long));
    assert.equal(JSON.parse(long).length, 1);
    const [asFloats] = await answers(mlp, [
      request(npy('<U300000', '1, 4', Buffer.concat([wide, wide, wide, wide])), 'application/x-npy'),
    ]);
    assertBounded400(asFloats);
  });

  it('v2 outputs named "__proto__" or "toString" and datatypes named "constructor" are 400 with a clear message', async () => {
    for (const name of ['__proto__', 'toString']) {
      const header = Buffer.from(
        JSON.stringify({
          inputs: [{ name: 'input', shape: [1, 4], datatype: 'FP32', data: [1, 2, 3, 4] }],
          outputs: [{ name }],
        }),
      );
      const [answer] = await answers(mlp, [
        request(header, `${OIP_MEDIA_TYPE};json-header-size=${header.length}`, OIP_MEDIA_TYPE),
      ]);
      assertBounded400(answer);
      assert.match((answer as Error).message, /requested output ".+" is not one of the model's outputs: output/);
    }
    const [dt] = await answers(mlp, [
      request(
        JSON.stringify({ inputs: [{ name: 'input', shape: [1, 4], datatype: 'constructor', data: [1, 2, 3, 4] }] }),
        'application/json',
      ),
    ]);
    assertBounded400(dt);
    assert.match((dt as Error).message, /datatype "constructor" is not one of BOOL/);
  });

  it('a v2 body answers only the outputs it names, whichever content type carried it and whatever the Accept; an unknown or prototype name is 400', async () => {
    const input = { name: 'input', shape: [1, 4], datatype: 'FP32', data: [1, 2, 3, 4] };
    const header = (outputs: unknown) => Buffer.from(JSON.stringify({ inputs: [input], outputs }));
    for (const name of ['__proto__', 'toString', 'nope']) {
      for (const req of [
        request(header([{ name }]), 'application/json'),
        request(header([{ name }]), `${OIP_MEDIA_TYPE};json-header-size=${header([{ name }]).length}`),
      ]) {
        const [answer] = await answers(mlp, [req]);
        assertBounded400(answer);
        assert.match((answer as Error).message, /is not one of the model's outputs: output/);
      }
    }
    const [named] = await answers(mlp, [request(header([{ name: 'output' }]), 'application/json')]);
    assert.deepEqual(
      JSON.parse(named as string).outputs.map((o: { name: string }) => o.name),
      ['output'],
    );
    const [bad] = await answers(mlp, [request(header('output'), 'application/json')]);
    assertBounded400(bad);
    assert.match((bad as Error).message, /"outputs" must be a list/);
  });

  it('a v2 output named more than once is 400 in JSON and binary bodies, before any output is built', async () => {
    const input = { name: 'input', shape: [1, 4], datatype: 'FP32', data: [1, 2, 3, 4] };
    const header = Buffer.from(
      JSON.stringify({ inputs: [input], outputs: Array.from({ length: 1000 }, () => ({ name: 'output' })) }),
    );
    for (const req of [
      request(header, 'application/json'),
      request(header, `${OIP_MEDIA_TYPE};json-header-size=${header.length}`, OIP_MEDIA_TYPE),
    ]) {
      const [answer] = await answers(mlp, [req]);
      assertBounded400(answer);
      assert.match((answer as Error).message, /requested output "output" is listed twice; name each output once/);
    }
  });

  it('a v2 input named twice is 400, not one of them silently dropped', async () => {
    const input = { name: 'input', shape: [1, 4], datatype: 'FP32', data: [1, 2, 3, 4] };
    const [answer] = await answers(mlp, [
      request(JSON.stringify({ inputs: [input, { ...input, data: [5, 6, 7, 8] }] }), 'application/json'),
    ]);
    assertBounded400(answer);
    assert.match((answer as Error).message, /v2 input "input" is listed twice/);
  });

  it('raw BYTES of empty elements past the shape are refused at the shape, not read into an element each', () => {
    const empties = Buffer.alloc(4 * 1_600_000);
    const header = Buffer.from(
      JSON.stringify({
        inputs: [{ name: 'x', shape: [1, 1], datatype: 'BYTES', parameters: { binary_data_size: empties.length } }],
      }),
    );
    const body = Buffer.concat([header, empties]);
    assert.throws(
      () =>
        decoderFor(OIP_MEDIA_TYPE).decode(
          request(body, `${OIP_MEDIA_TYPE};json-header-size=${header.length}`),
          strings.inputs,
          new RequestBudget(kMaxElements, body.length),
        ),
      (err: unknown) =>
        isMmeError(err) && err.status === 400 && /holds more than the 1 elements its shape needs/.test(err.message),
    );
  });
});
