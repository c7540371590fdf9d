/**
 * Issue 21's gRPC rows, each a regression test named after its "Why" item: hostile input on both
 * gRPC services is INVALID_ARGUMENT (or NOT_FOUND), never INTERNAL or UNKNOWN, its status quotes
 * little of it, and a StreamPredictions2 client writing faster than the model answers costs the
 * server job_queue_size requests, freed at once by a cancel.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {
  Client,
  credentials,
  Metadata,
  status as Status,
  type ClientDuplexStream,
  type ServiceError,
} from '@grpc/grpc-js';
import { serviceDefinitions } from '../../src/grpc/protos';
import { DETAILS_LIMIT, toServiceError } from '../../src/grpc/status';
import { MmeError } from '../../src/errors';
import { behaviourHandler } from '../../harness/fault-handlers';
import { addModel, mlpModel, multiIoModel, writeModelDir } from '../../harness/onnx-models';
import { failure, grpcClients, unary, type GrpcClients } from '../../harness/grpc-clients';
import { waitFor } from '../../harness/process-probes';
import { field, text, varint } from '../helpers/protobuf-wire';
import { loadModel } from '../../harness/http-requests';
import { startTestServer, tempDir, type TestServer } from '../../harness/test-server';
import { f32 } from '../../harness/float32';

const json = (value: unknown) => Buffer.from(JSON.stringify(value));
const MiB = 2 ** 20;
/** What no status's details may exceed (the issue's bound for any error body). */
const kMaxDetails = 64 * 1024;

type StreamAnswer = { prediction: Buffer; sequenceId: string; status: { code: number; message: string } | null };

/** A client mistake's status: the expected code, never INTERNAL or UNKNOWN, and short details. */
function assertClientError(err: ServiceError, code: Status, what: string): void {
  assert.notEqual(err.code, Status.INTERNAL, `${what}: INTERNAL (${err.details})`);
  assert.notEqual(err.code, Status.UNKNOWN, `${what}: UNKNOWN (${err.details})`);
  assert.equal(err.code, code, `${what}: ${Status[err.code]} (${err.details})`);
  assert.ok(
    Buffer.byteLength(err.details) < kMaxDetails,
    `${what}: ${Buffer.byteLength(err.details)} bytes of details`,
  );
}

/** A call whose request message is `bytes` as they are: what a broken or hostile encoder sends. */
function rawUnary(port: number, method: string, bytes: Buffer): Promise<ServiceError> {
  const client = new Client(`127.0.0.1:${port}`, credentials.createInsecure());
  return new Promise<ServiceError>((resolve, reject) => {
    client.makeUnaryRequest(
      method,
      (b: Buffer) => b,
      (b: Buffer) => b,
      bytes,
      new Metadata(),
      {},
      (err) => {
        client.close();
        if (err) resolve(err);
        else reject(new Error(`${method} succeeded`));
      },
    );
  });
}

/** A ModelInferRequest for model `mlp` with the given InferInputTensor payloads. */
const inferRequest = (...inputs: Buffer[]) => Buffer.concat([text(1, 'mlp'), ...inputs.map((i) => field(5, i))]);
const input = (shape: number[], contents: Buffer) =>
  Buffer.concat([text(1, 'input'), text(2, 'BYTES'), field(3, Buffer.concat(shape.map(varint))), field(5, contents)]);

/** Field 1, a string whose length varint never ends: protobuf no decoder reads. */
const kUndecodable = Buffer.from([0x0a, 0xff]);

describe('gRPC boundary (issue 21): client mistakes are INVALID_ARGUMENT, never INTERNAL', () => {
  let t: TestServer;
  let c: GrpcClients;
  before(async () => {
    t = await startTestServer('grpc_inference_port=0');
    const loads = [
      loadModel(t, 'multi', writeModelDir(t.store, 'multi', multiIoModel())),
      loadModel(t, 'mlp', writeModelDir(t.store, 'mlp', mlpModel({ sizes: [4, 8, 3] }))),
      loadModel(t, 'echo', writeModelDir(t.store, 'echo', addModel(), { 'handler.js': behaviourHandler })),
    ];
    for (const r of await Promise.all(loads)) assert.equal(r.status, 200, r.text);
    c = grpcClients(t.server.grpc!.port);
  });
  after(async () => {
    c.close();
    await t.close();
  });

  const infer = (req: Record<string, unknown>) =>
    failure(unary(c.kserve, 'ModelInfer', { model_name: 'multi', ...req }));
  const typedA = (datatype: string) => ({
    inputs: [{ name: 'a', datatype, shape: [1, 4], contents: { fp32_contents: [1, 2, 3, 4] } }],
  });

  it("gRPC datatype 'constructor' is INVALID_ARGUMENT, not INTERNAL", async () => {
    for (const datatype of ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf', '']) {
      const typed = await infer(typedA(datatype));
      assertClientError(typed, Status.INVALID_ARGUMENT, `typed contents, datatype ${JSON.stringify(datatype)}`);
      assert.match(typed.details, /datatype ".*" is not one of BOOL, .*FP32/);
      const raw = await infer({
        inputs: [{ name: 'a', datatype, shape: [1, 4] }],
        raw_input_contents: [f32([1, 2, 3, 4])],
      });
      assertClientError(raw, Status.INVALID_ARGUMENT, `raw contents, datatype ${JSON.stringify(datatype)}`);
    }
  });

  it("gRPC outputs: [{name: '__proto__' | 'toString'}] is INVALID_ARGUMENT, not INTERNAL", async () => {
    // The output is looked up in the worker's OIP codec (src/worker-process/oip-codec.ts): a failure
    // here is that codec's lookup on a plain object.
    const inputs = [
      { name: 'a', datatype: 'FP32', shape: [1, 4], contents: { fp32_contents: [1, 2, 3, 4] } },
      { name: 'b', datatype: 'INT64', shape: [1, 2], contents: { int64_contents: ['1', '2'] } },
    ];
    for (const name of ['__proto__', 'toString', 'constructor', 'hasOwnProperty']) {
      const err = await infer({ inputs, outputs: [{ name }] });
      assertClientError(err, Status.INVALID_ARGUMENT, `output ${name}`);
      assert.match(err.details, /not one of the model's outputs/);
    }
  });

  it('gRPC ModelInfer naming an output more than once is INVALID_ARGUMENT, as in the HTTP codecs', async () => {
    const inputs = [{ name: 'input', datatype: 'FP32', shape: [1, 4], contents: { fp32_contents: [1, 2, 3, 4] } }];
    const err = await failure(
      unary(c.kserve, 'ModelInfer', {
        model_name: 'mlp',
        inputs,
        outputs: Array.from({ length: 100 }, () => ({ name: 'output' })),
      }),
    );
    assertClientError(err, Status.INVALID_ARGUMENT, 'duplicate outputs');
    assert.match(err.details, /requested output "output" is listed twice; name each output once/);
  });

  it('gRPC ModelInfer: every malformed tensor is INVALID_ARGUMENT with a message naming it', async () => {
    const input = (fields: Record<string, unknown>) => ({
      inputs: [{ name: 'input', datatype: 'FP32', shape: [1, 4], ...fields }],
    });
    const cases: Array<[string, Record<string, unknown>, RegExp]> = [
      [
        'a negative dimension',
        input({ shape: [-1, 4], contents: { fp32_contents: [1, 2, 3, 4] } }),
        /input "input": shape dimension "-1" is not a non-negative integer/,
      ],
      [
        'a dimension past 2^53',
        { ...input({ shape: ['9007199254740993', 4] }), raw_input_contents: [f32([1, 2, 3, 4])] },
        /shape dimension "9007199254740993" is not a non-negative integer/,
      ],
      [
        'typed contents fewer than the shape needs',
        input({ shape: [2, 4], contents: { fp32_contents: [1, 2, 3] } }),
        /contents.fp32_contents holds 3 elements, but shape \[2, 4\] needs 8/,
      ],
      [
        'an INT8 element out of range',
        input({ datatype: 'INT8', shape: [1, 1], contents: { int_contents: [300] } }),
        /element 0, 300, is not a INT8 value/,
      ],
      [
        'FP16 in typed contents',
        input({ datatype: 'FP16', shape: [1], contents: { fp32_contents: [1] } }),
        /FP16 has no typed contents; send it in raw_input_contents/,
      ],
      ['raw contents that do not match the shape', { ...input({}), raw_input_contents: [f32([1, 2, 3])] }, /12 bytes/],
      [
        'more raw contents than inputs',
        { ...input({}), raw_input_contents: [f32([1, 2, 3, 4]), f32([1])] },
        /raw_input_contents has 2 entries but there are 1 inputs/,
      ],
      [
        'typed contents beside raw_input_contents',
        { ...input({ contents: { fp32_contents: [1, 2, 3, 4] } }), raw_input_contents: [f32([1, 2, 3, 4])] },
        /input "input" has typed contents, but the request sends raw_input_contents/,
      ],
      [
        'an unknown input name',
        { inputs: [{ name: 'zzz', datatype: 'FP32', shape: [1, 4], contents: { fp32_contents: [1, 2, 3, 4] } }] },
        /zzz/,
      ],
      ['no inputs', { inputs: [] }, /./],
    ];
    for (const [what, req, message] of cases) {
      const err = await failure(unary(c.kserve, 'ModelInfer', { model_name: 'mlp', ...req }));
      assertClientError(err, Status.INVALID_ARGUMENT, what);
      assert.match(err.details, message, what);
    }
  });

  it('gRPC: a model name, version or input name of 1 MB is quoted in at most ~100 characters', async () => {
    const long = 'n'.repeat(MiB);
    const cases: Array<[string, Promise<ServiceError>, Status]> = [
      ['ModelInfer model_name', infer({ model_name: long, inputs: [] }), Status.NOT_FOUND],
      ['ModelInfer model_version', infer({ model_version: long, ...typedA('FP32') }), Status.NOT_FOUND],
      ['ModelMetadata name', failure(unary(c.kserve, 'ModelMetadata', { name: long })), Status.NOT_FOUND],
      ['ModelReady name', failure(unary(c.kserve, 'ModelReady', { name: long })), Status.NOT_FOUND],
      [
        'Predictions model_name',
        failure(unary(c.torchserve, 'Predictions', { model_name: long, input: { data: json({}) } })),
        Status.NOT_FOUND,
      ],
      [
        'ModelInfer input name',
        infer({ inputs: [{ name: long, datatype: 'FP32', shape: [1, 4], contents: { fp32_contents: [1, 2, 3, 4] } }] }),
        Status.INVALID_ARGUMENT,
      ],
      ['ModelInfer datatype', infer(typedA(long)), Status.INVALID_ARGUMENT],
    ];
    for (const [what, call, code] of cases) {
      const err = await call;
      assertClientError(err, code, what);
      assert.ok(
        !err.details.includes('n'.repeat(101)),
        `${what} quotes more than 100 characters: ${err.details.slice(0, 300)}`,
      );
    }
  });

  it('gRPC: a request message that is not valid protobuf is INVALID_ARGUMENT, not INTERNAL, on every method', async () => {
    const port = t.server.grpc!.port;
    for (const method of [
      '/inference.GRPCInferenceService/ModelInfer',
      '/inference.GRPCInferenceService/ModelMetadata',
      '/org.pytorch.serve.grpc.inference.InferenceAPIsService/Predictions',
    ]) {
      const err = await rawUnary(port, method, kUndecodable);
      assertClientError(err, Status.INVALID_ARGUMENT, method);
      assert.match(err.details, /not a valid protobuf message for \/.*; encode it with that method's request type/);
    }
  });

  it('gRPC typed BYTES of 1 000 000 empty elements (2 MB on the wire) is INVALID_ARGUMENT, refused by their count (the memory they cost: npm run soak)', async () => {
    const port = t.server.grpc!.port;
    const empties = Buffer.alloc(2 * 1_000_000);
    for (let i = 0; i < empties.length; i += 2) empties[i] = 8 * 8 + 2; // bytes_contents, length 0
    const message = inferRequest(input([1_000_000], empties));
    const err = await rawUnary(port, '/inference.GRPCInferenceService/ModelInfer', message);
    assertClientError(err, Status.INVALID_ARGUMENT, 'a million empty bytes_contents');
    assert.match(
      err.details,
      /more than 65536 bytes_contents elements; send large BYTES tensors in raw_input_contents/,
    );
  });

  it('gRPC: every repeated field a client sizes is bounded before decoding (inputs, raw contents, shape dims, typed elements, TorchServe input entries)', async () => {
    const port = t.server.grpc!.port;
    const infer = '/inference.GRPCInferenceService/ModelInfer';
    const cases: Array<[string, string, Buffer, RegExp]> = [
      [
        '1025 inputs',
        infer,
        inferRequest(...Array.from({ length: 1025 }, () => Buffer.alloc(0))),
        /more than 1024 inputs/,
      ],
      [
        '1025 raw_input_contents',
        infer,
        Buffer.concat([text(1, 'mlp'), ...Array.from({ length: 1025 }, () => field(7, Buffer.alloc(0)))]),
        /more than 1024 raw_input_contents entries/,
      ],
      [
        'a 65-dimension shape',
        infer,
        inferRequest(input(new Array(65).fill(1), Buffer.alloc(0))),
        /more than 64 dimensions in one input's shape/,
      ],
      [
        '2^20 + 1 packed int32 contents',
        infer,
        inferRequest(input([1], field(2, Buffer.alloc((1 << 20) + 1)))),
        /more than 1048576 elements in typed contents/,
      ],
      [
        '1025 TorchServe input entries',
        '/org.pytorch.serve.grpc.inference.InferenceAPIsService/Predictions',
        Buffer.concat([
          text(1, 'mlp'),
          ...Array.from({ length: 1025 }, (_, i) => field(3, Buffer.concat([text(1, `h${i}`), text(2, '')]))),
        ]),
        /more than 1024 input entries/,
      ],
    ];
    for (const [what, method, message, pattern] of cases) {
      const err = await rawUnary(port, method, message);
      assertClientError(err, Status.INVALID_ARGUMENT, what);
      assert.match(err.details, pattern, what);
    }
    // At the limits, the same messages decode and fail (or not) on their own merits.
    const atLimit = await rawUnary(port, infer, inferRequest(input(new Array(64).fill(1), Buffer.alloc(0))));
    assert.doesNotMatch(atLimit.details, /Refused before decoding/);
  });

  it('gRPC StreamPredictions and StreamPredictions2: an undecodable message is INVALID_ARGUMENT, and the stream of requests goes on', async () => {
    const client = new Client(`127.0.0.1:${t.server.grpc!.port}`, credentials.createInsecure());
    try {
      const service = '/org.pytorch.serve.grpc.inference.InferenceAPIsService';
      const streamed = client.makeServerStreamRequest(
        `${service}/StreamPredictions`,
        (b: Buffer) => b,
        (b: Buffer) => b,
        kUndecodable,
      );
      const streamErr = await new Promise<ServiceError>((resolve) => {
        streamed.on('data', () => undefined);
        streamed.on('error', resolve);
      });
      assertClientError(streamErr, Status.INVALID_ARGUMENT, 'StreamPredictions');
    } finally {
      client.close();
    }
    // One undecodable message between two good ones, each encoded here: grpc-js's encoder cannot write the bad one.
    const method = serviceDefinitions().torchserve.service.StreamPredictions2;
    const bidi = new Client(`127.0.0.1:${t.server.grpc!.port}`, credentials.createInsecure());
    try {
      const call = bidi.makeBidiStreamRequest(
        method.path,
        (b: Buffer) => b,
        method.responseDeserialize,
      ) as ClientDuplexStream<Buffer, StreamAnswer>;
      const answers: StreamAnswer[] = [];
      const done = new Promise<void>((resolve, reject) => {
        call.on('data', (m: StreamAnswer) => answers.push(m));
        call.on('error', reject);
        call.on('end', resolve);
      });
      call.write(method.requestSerialize({ model_name: 'echo', sequenceId: 'a', input: { data: json({ echo: 1 }) } }));
      call.write(kUndecodable);
      call.write(method.requestSerialize({ model_name: 'echo', sequenceId: 'c', input: { data: json({ echo: 3 }) } }));
      call.end();
      await done;
      assert.deepEqual(
        answers.map((a) => [a.sequenceId, a.status?.code ?? Status.OK]),
        [
          ['a', Status.OK],
          ['', Status.INVALID_ARGUMENT],
          ['c', Status.OK],
        ],
      );
      assert.match(answers[1].status!.message, /not a valid protobuf message/);
      assert.equal(JSON.parse(answers[2].prediction.toString()).echo, 3);
    } finally {
      bidi.close();
    }
  });

  it('TorchServe Predictions: input keys named like Object members are entries like any other', async () => {
    for (const key of ['__proto__', 'toString', 'constructor', 'hasOwnProperty']) {
      const ok = await unary(c.torchserve, 'Predictions', {
        model_name: 'echo',
        input: { data: json({ echo: key }), [key]: Buffer.from('v') },
      });
      assert.equal(JSON.parse(ok.prediction.toString()).echo, key);
      const missing = await failure(
        unary(c.torchserve, 'Predictions', { model_name: 'echo', input: { [key]: json({ echo: key }) } }),
      );
      assertClientError(missing, Status.INVALID_ARGUMENT, `input with only ${key}`);
      assert.match(missing.details, /has no "data" or "body" entry/);
    }
  });

  it("TorchServe Predictions: a handler's 4xx is INVALID_ARGUMENT (404 NOT_FOUND), its 507 RESOURCE_EXHAUSTED", async () => {
    const raise = (status: number) =>
      failure(
        unary(c.torchserve, 'Predictions', { model_name: 'echo', input: { data: json({ fail: 'no', status }) } }),
      );
    assertClientError(await raise(422), Status.INVALID_ARGUMENT, '422');
    assertClientError(await raise(400), Status.INVALID_ARGUMENT, '400');
    assertClientError(await raise(404), Status.NOT_FOUND, '404');
    assertClientError(await raise(507), Status.RESOURCE_EXHAUSTED, '507');
  });

  it('gRPC: an error about 6 MB of client input (0x01 as text/csv, unterminated JSON) is INVALID_ARGUMENT with details under 64 KiB', async () => {
    const body = Buffer.alloc(6 * MiB, 1);
    const err = await failure(
      unary(c.torchserve, 'Predictions', {
        model_name: 'mlp',
        input: { data: body, 'content-type': Buffer.from('text/csv') },
      }),
    );
    assertClientError(err, Status.INVALID_ARGUMENT, 'csv of 0x01');
    const json400 = await failure(
      unary(c.torchserve, 'Predictions', {
        model_name: 'mlp',
        input: { data: Buffer.concat([Buffer.from('{"inputs": "'), Buffer.alloc(MiB, 0x78)]) },
      }),
    );
    assertClientError(json400, Status.INVALID_ARGUMENT, 'unterminated JSON');
  });

  it('gRPC: JSON nested 200 000 deep (TorchServe Predictions) is INVALID_ARGUMENT, not INTERNAL', async () => {
    // Decoded by the worker's JSON codec (src/worker-process/json-codec.ts); a failure here is its recursion.
    const deep = `${'['.repeat(200_000)}${']'.repeat(200_000)}`;
    const err = await failure(
      unary(c.torchserve, 'Predictions', { model_name: 'mlp', input: { data: Buffer.from(deep) } }),
    );
    assertClientError(err, Status.INVALID_ARGUMENT, 'deep JSON');
  });

  it('gRPC status details are capped at DETAILS_LIMIT characters and well-formed, whatever the message', () => {
    const long = toServiceError(new MmeError('MME_ERR_INVALID_INPUT', 'é'.repeat(8000)));
    assert.equal(long.code, Status.INVALID_ARGUMENT);
    assert.ok(long.details.length <= DETAILS_LIMIT + 40, `${long.details.length} characters`);
    const lone = toServiceError(new MmeError('MME_ERR_INVALID_INPUT', `bad ${'\ud800'} surrogate`));
    assert.equal(lone.details, 'bad \ufffd surrogate');
    assert.doesNotThrow(() => encodeURI(lone.details));
  });

  it('gRPC: a handler error of 8 KiB of non-ASCII text still reaches the client as its status', async () => {
    const err = await failure(
      unary(c.torchserve, 'Predictions', {
        model_name: 'echo',
        input: { data: json({ fail: '€'.repeat(8192), status: 400 }) },
      }),
    );
    assertClientError(err, Status.INVALID_ARGUMENT, 'long handler message');
    assert.match(err.details, /^€+… \(\d+ more characters\)$/);
  });
});

/**
 * A slow model that counts what reaches it: each request appends a byte to the file its JSON body
 * names, then blocks for sleepMs.
 */
const countingSlowHandler = `
const fs = require('node:fs');
exports.handle = async (requests) => requests.map((req) => {
  const cmd = JSON.parse(req.body.toString());
  fs.appendFileSync(cmd.log, 'x');
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, cmd.sleepMs);
  return JSON.stringify({ ran: true });
});
`;

describe('gRPC boundary (issue 21): StreamPredictions2 holds at most job_queue_size requests of a stream', () => {
  const kQueue = 4;
  let t: TestServer;
  let c: GrpcClients;
  let log: string;
  before(async () => {
    t = await startTestServer('grpc_inference_port=0');
    log = path.join(tempDir('mme-stream-'), 'ran');
    const r = await loadModel(
      t,
      'slow',
      writeModelDir(t.store, 'slow', addModel(), { 'handler.js': countingSlowHandler }),
      { job_queue_size: kQueue },
    );
    assert.equal(r.status, 200, r.text);
    c = grpcClients(t.server.grpc!.port);
  });
  after(async () => {
    c.close();
    await t.close();
  });

  const ran = () => (fs.existsSync(log) ? fs.statSync(log).size : 0);

  it('TorchServe StreamPredictions2 holds at most job_queue_size requests of a stream writing far faster than the model answers; a cancel frees them and nothing more reaches the worker (the RSS it costs: npm run soak)', async () => {
    const model = t.server.manager.registry.get('slow');
    const streams = t.server.grpc!.streams;
    // One 1 MiB request, written 400 times without waiting: the client sends as fast as the server
    // lets it (the same object each time, so the client's side of this process holds one copy).
    const message = {
      model_name: 'slow',
      sequenceId: 's',
      input: { data: json({ log, sleepMs: 20, pad: 'p'.repeat(MiB) }) },
    };
    const kMessages = 400;
    // A warm-up request first: the allocations of a first call are not the stream's.
    await unary(c.torchserve, 'Predictions', message);

    const call = c.torchserve.StreamPredictions2() as ClientDuplexStream<unknown, StreamAnswer>;
    let answered = 0;
    // An assertion thrown in a 'data' listener would reach grpc-js, not this test: kept for after.
    const notOk: string[] = [];
    call.on('data', (m: StreamAnswer) => {
      if ((m.status?.code ?? Status.OK) !== Status.OK) notOk.push(`${m.status?.code}: ${m.status?.message}`);
      answered++;
    });
    const closed = new Promise<ServiceError | null>((resolve) => {
      call.on('error', resolve);
      call.on('end', () => resolve(null));
    });
    for (let i = 0; i < kMessages; i++) call.write(message);

    await waitFor(() => answered >= 40, '40 answers', 60_000);
    // What the server read and holds: never more than job_queue_size of the stream's requests,
    // although the client had all 400 ready to send from the start.
    assert.ok(
      streams.peakHeld <= kQueue,
      `the server held ${streams.peakHeld} requests of the stream (job_queue_size ${kQueue})`,
    );

    const abortedBefore = streams.aborted;
    call.cancel();
    assert.equal((await closed)?.code, Status.CANCELLED);
    assert.deepEqual(notOk, [], 'every answer of the stream is OK');
    // The client sees its cancel at once, the server only when the RST_STREAM arrives: until then
    // `held` can touch 0 between an answer written and the next request read.
    await waitFor(
      () => streams.aborted > abortedBefore && streams.held === 0,
      'the server to see the cancel and drop what the stream held',
    );
    const reached = model.stats.requests;
    const readAtCancel = streams.read;
    await waitFor(() => model.queueLength === 0 && model.inFlightRequests === 0, 'the model to go idle');
    // A request after the cancel runs after anything of the stream still queued (one worker, FIFO):
    // once it is answered, every request of the stream that was ever going to run has run.
    await unary(c.torchserve, 'Predictions', message);
    assert.equal(model.stats.requests, reached + 1, 'a request of the cancelled stream reached the worker');
    assert.equal(ran(), reached + 1, 'the worker ran requests it was not sent');
    assert.equal(streams.read, readAtCancel, 'the server read from the cancelled stream');
    assert.ok(readAtCancel < kMessages / 2, `read ${readAtCancel} of ${kMessages}`);
  });

  it('StreamPredictions2 resumes reading as its requests drain: every request of a long stream is answered, in order', async () => {
    const call = c.torchserve.StreamPredictions2() as ClientDuplexStream<unknown, StreamAnswer>;
    const answers: string[] = [];
    const done = new Promise<void>((resolve, reject) => {
      call.on('data', (m: StreamAnswer) => answers.push(m.sequenceId));
      call.on('error', reject);
      call.on('end', resolve);
    });
    const kMessages = 5 * kQueue + 1;
    for (let i = 0; i < kMessages; i++)
      call.write({ model_name: 'slow', sequenceId: String(i), input: { data: json({ log, sleepMs: 1 }) } });
    call.end();
    await done;
    assert.deepEqual(
      answers,
      Array.from({ length: kMessages }, (_, i) => String(i)),
    );
    assert.equal(t.server.grpc!.streams.held, 0);
  });
});
