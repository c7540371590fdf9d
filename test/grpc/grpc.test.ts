import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { Metadata, status as Status, type ClientReadableStream, type ClientDuplexStream } from '@grpc/grpc-js';
import { behaviourHandler, slowLoading } from '../../harness/fault-handlers';
import { addModel, identityModel, mlpForward, mlpModel, multiIoModel, writeModelDir } from '../../harness/onnx-models';
import { failure, grpcClients, unary, type GrpcClients } from '../../harness/grpc-clients';
import { waitFor } from '../../harness/process-probes';
import { loadModel, request } from '../../harness/http-requests';
import { startTestServer, tempDir, type TestServer } from '../../harness/test-server';
import { assertValuesClose } from '../helpers/assert-close';
import { f32 } from '../../harness/float32';

// Compiled to dist/test/grpc/, so the repo root is three levels up.
const GENERATOR_DIR = path.resolve(__dirname, '../../../model-store/text-generator');
const kMlp = { sizes: [4, 8, 3] };
const rows = [
  [1, 2, 3, 4],
  [0, -1, 0.5, 2],
];
const json = (value: unknown) => Buffer.from(JSON.stringify(value));

function collect<T>(
  stream: ClientReadableStream<T> | ClientDuplexStream<unknown, T>,
): Promise<{ messages: T[]; error: Error | null }> {
  const messages: T[] = [];
  return new Promise((resolve) => {
    stream.on('data', (m: T) => messages.push(m));
    stream.on('error', (error) => resolve({ messages, error }));
    stream.on('end', () => resolve({ messages, error: null }));
  });
}

describe('gRPC: KServe GRPCInferenceService and TorchServe InferenceAPIsService on grpc_inference_port', () => {
  let t: TestServer;
  let c: GrpcClients;
  const barrier = path.join(tempDir('mme-grpc-'), 'release');
  before(async () => {
    const store = tempDir('mme-store-');
    t = await startTestServer(
      `grpc_inference_port=0\nmax_request_size=4096\nload_wait_timeout=0.2\nmodel_roots=${path.dirname(GENERATOR_DIR)},${store}`,
      { store },
    );
    writeModelDir(t.store, 'slow', addModel(), { 'handler.js': slowLoading });
    const loads = [
      loadModel(t, 'mlp', writeModelDir(t.store, 'mlp', mlpModel(kMlp))),
      loadModel(t, 'multi', writeModelDir(t.store, 'multi', multiIoModel())),
      loadModel(t, 'half', writeModelDir(t.store, 'half', identityModel('float16'))),
      loadModel(t, 'text-generator', GENERATOR_DIR),
      loadModel(t, 'busy', writeModelDir(t.store, 'busy', addModel(), { 'handler.js': behaviourHandler }), {
        job_queue_size: 2,
      }),
      loadModel(t, 'hang', writeModelDir(t.store, 'hang', addModel(), { 'handler.js': behaviourHandler }), {
        response_timeout: 1,
      }),
    ];
    for (const r of await Promise.all(loads)) assert.equal(r.status, 200, r.text);
    c = grpcClients(t.server.grpc!.port);
  });
  after(async () => {
    c.close();
    await t.close();
  });

  it('answers ServerLive, ServerReady, ServerMetadata, ModelReady and ModelMetadata', async () => {
    assert.deepEqual(await unary(c.kserve, 'ServerLive'), { live: true });
    assert.deepEqual(await unary(c.kserve, 'ServerReady'), { ready: true });
    const server = await unary(c.kserve, 'ServerMetadata');
    assert.equal(server.name, 'sagemaker-mme-node');
    assert.deepEqual(server.extensions, ['binary_tensor_data']);
    assert.deepEqual(await unary(c.kserve, 'ModelReady', { name: 'mlp' }), { ready: true });
    assert.deepEqual(await unary(c.kserve, 'ModelReady', { name: 'slow', version: '1' }), { ready: false });
    const meta = await unary(c.kserve, 'ModelMetadata', { name: 'multi' });
    assert.deepEqual(meta.inputs, [
      { name: 'a', datatype: 'FP32', shape: ['-1', '4'] },
      { name: 'b', datatype: 'INT64', shape: ['-1', '2'] },
    ]);
    assert.deepEqual([meta.versions, meta.platform], [['1'], 'onnxruntime_onnx']);
  });

  it('ModelInfer with typed contents answers typed contents, int64 exact, echoing the id', async () => {
    const res = await unary(c.kserve, 'ModelInfer', {
      model_name: 'multi',
      id: 'typed-1',
      inputs: [
        { name: 'a', datatype: 'FP32', shape: [1, 4], contents: { fp32_contents: [1, 2, 3, 4] } },
        { name: 'b', datatype: 'INT64', shape: [1, 2], contents: { int64_contents: ['7', '9007199254740993'] } },
      ],
    });
    assert.equal(res.id, 'typed-1');
    assert.equal(res.model_name, 'multi');
    assert.deepEqual(res.raw_output_contents, []);
    const [sum, bOut] = res.outputs;
    assert.deepEqual(
      [sum.name, sum.datatype, sum.shape, sum.contents.fp32_contents],
      ['sum', 'FP32', ['1', '4'], [2, 4, 6, 8]],
    );
    assert.deepEqual(bOut.contents.int64_contents, ['7', '9007199254740993']);
  });

  it('ModelInfer with raw_input_contents answers raw_output_contents, only the outputs asked for', async () => {
    const res = await unary(c.kserve, 'ModelInfer', {
      model_name: 'mlp',
      inputs: [{ name: 'input', datatype: 'FP32', shape: [2, 4] }],
      raw_input_contents: [f32(rows.flat())],
      outputs: [{ name: 'output' }],
    });
    assert.equal(res.outputs.length, 1);
    assert.equal(res.outputs[0].contents, null);
    const raw: Buffer = res.raw_output_contents[0];
    assertValuesClose(
      new Float32Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.length)),
      mlpForward(kMlp, rows).flat(),
    );
    const half = Buffer.from(Uint16Array.of(0x3c00, 0xc000).buffer);
    const fp16 = await unary(c.kserve, 'ModelInfer', {
      model_name: 'half',
      inputs: [{ name: 'x', datatype: 'FP16', shape: [1, 2] }],
      raw_input_contents: [half],
    });
    assert.deepEqual(fp16.raw_output_contents, [half]);
  });

  it('maps errors: NOT_FOUND, INVALID_ARGUMENT, UNAVAILABLE while loading, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED over max_request_size', async () => {
    const unknown = await failure(unary(c.kserve, 'ModelInfer', { model_name: 'nope', inputs: [] }));
    assert.equal(unknown.code, Status.NOT_FOUND);
    assert.deepEqual(unknown.metadata.get('mme-error-code'), ['MME_ERR_MODEL_NOT_FOUND']);
    assert.equal((await failure(unary(c.kserve, 'ModelMetadata', { name: 'nope' }))).code, Status.NOT_FOUND);
    assert.equal(
      (await failure(unary(c.torchserve, 'Predictions', { model_name: 'nope', input: { data: json({}) } }))).code,
      Status.NOT_FOUND,
    );
    const bad = await failure(
      unary(c.kserve, 'ModelInfer', {
        model_name: 'mlp',
        inputs: [{ name: 'input', datatype: 'FP32', shape: [1, 4] }],
        raw_input_contents: [f32([1, 2, 3])],
      }),
    );
    assert.equal(bad.code, Status.INVALID_ARGUMENT);
    assert.match(bad.details, /12 bytes of FP32 data, but its shape \[1, 4\] needs 4 elements/);
    assert.equal(
      (await failure(unary(c.torchserve, 'Predictions', { model_name: 'mlp', input: {} }))).code,
      Status.INVALID_ARGUMENT,
    );
    const loading = await failure(
      unary(c.torchserve, 'Predictions', { model_name: 'slow', input: { data: json({}) } }),
    );
    assert.equal(loading.code, Status.UNAVAILABLE);
    assert.deepEqual(loading.metadata.get('mme-error-code'), ['MME_ERR_MODEL_LOADING']);
    const timeout = await failure(
      unary(c.torchserve, 'Predictions', { model_name: 'hang', input: { data: json({ hang: true }) } }),
    );
    assert.equal(timeout.code, Status.DEADLINE_EXCEEDED);
    assert.match(timeout.details, /did not answer within 1 s/);
    const large = await failure(
      unary(c.kserve, 'ModelInfer', {
        model_name: 'mlp',
        inputs: [{ name: 'input', datatype: 'FP32', shape: [1, 1024] }],
        raw_input_contents: [Buffer.alloc(4096)],
      }),
    );
    assert.equal(large.code, Status.RESOURCE_EXHAUSTED);
  });

  it('shares the queue with HTTP: RESOURCE_EXHAUSTED when it is full, and a deadline drops queued work unrun', async () => {
    const model = t.server.manager.registry.get('busy');
    const predict = (cmd: unknown, deadlineMs?: number) =>
      unary(c.torchserve, 'Predictions', { model_name: 'busy', input: { data: json(cmd) } }, deadlineMs);
    const marker = path.join(path.dirname(barrier), 'ran');
    // One running (held), one in the worker's pipe, one queued over HTTP, one queued over gRPC with a deadline.
    const held = [predict({ barrier, echo: 'held' }), predict({ echo: 'piped' })];
    await waitFor(() => model.inFlightRequests === 2, 'two requests at the worker');
    const viaHttp = request(`${t.url}/models/busy/invoke`, { method: 'POST', json: { echo: 'http' } });
    const dropped = failure(predict({ touch: marker }, 300));
    await waitFor(() => model.queueLength === 2, 'the queue to fill');
    const full = await failure(predict({ echo: 'refused' }));
    assert.equal(full.code, Status.RESOURCE_EXHAUSTED);
    assert.deepEqual(full.metadata.get('mme-error-code'), ['MME_ERR_QUEUE_FULL']);
    assert.equal((await dropped).code, Status.DEADLINE_EXCEEDED);
    await waitFor(() => model.queueLength === 1, 'the abandoned request to leave the queue');
    fs.writeFileSync(barrier, '');
    for (const r of await Promise.all(held)) assert.equal(JSON.parse(r.prediction.toString()).batch, 1);
    assert.equal((await viaHttp).status, 200);
    assert.equal(fs.existsSync(marker), false, 'the request whose deadline passed in the queue ran');
  });

  it('Ping and Predictions (input "data" or "body"; other entries are headers)', async () => {
    const ping = await unary(c.torchserve, 'Ping', {});
    assert.deepEqual(JSON.parse(ping.health), { status: 'Healthy' });
    const res = await unary(c.torchserve, 'Predictions', {
      model_name: 'mlp',
      input: { data: json({ inputs: { input: rows } }) },
    });
    assertValuesClose(JSON.parse(res.prediction.toString()).outputs.output.flat(), mlpForward(kMlp, rows).flat());
    const csv = await unary(c.torchserve, 'Predictions', {
      model_name: 'mlp',
      input: {
        body: Buffer.from('1,2,3,4\n'),
        'content-type': Buffer.from('text/csv'),
        accept: Buffer.from('text/csv'),
      },
    });
    assertValuesClose(csv.prediction.toString().trim().split(',').map(Number), mlpForward(kMlp, [rows[0]]).flat());
  });

  it("StreamPredictions streams a streaming handler's chunks, then its final answer", async () => {
    const call = c.torchserve.StreamPredictions({
      model_name: 'text-generator',
      input: { data: json({ prompt: 'hello', max_tokens: 5 }) },
    }) as ClientReadableStream<{ prediction: Buffer }>;
    const requestId = new Promise<Metadata>((resolve) => call.on('metadata', resolve));
    const { messages, error } = await collect(call);
    assert.equal(error, null);
    assert.equal(messages.length, 6);
    const tokens = messages
      .slice(0, 5)
      .map((m) => JSON.parse(m.prediction.toString()).token)
      .join('');
    assert.deepEqual(JSON.parse(messages[5].prediction.toString()), { text: tokens, tokens: 5 });
    assert.equal((await requestId).get('x-request-id').length, 1);
  });

  it('a cancel mid-stream stops the handler (context.isCancelled)', async () => {
    const call = c.torchserve.StreamPredictions({
      model_name: 'text-generator',
      input: { data: json({ prompt: 'stop me', max_tokens: 1000, delay_ms: 20 }) },
    }) as ClientReadableStream<{ prediction: Buffer }>;
    let received = 0;
    call.on('data', () => {
      if (++received === 3) call.cancel();
    });
    const { error } = await collect(call);
    assert.equal((error as { code?: number }).code, Status.CANCELLED);
    const stopped = /client disconnected: stopped after (\d+) of 1000 tokens/;
    await waitFor(() => t.logs.some((l) => stopped.test(l)), 'the handler to log that it stopped');
    const produced = Number(stopped.exec(t.logs.find((l) => stopped.test(l))!)![1]);
    // It stopped early, wherever the cancel found it: how many tokens fit in between depends on the machine's load.
    assert.ok(produced >= 3 && produced < 1000, `stopped after ${produced} tokens`);
  });

  it("StreamPredictions2 answers a stream of requests in order, a failure as that answer's status", async () => {
    const call = c.torchserve.StreamPredictions2() as ClientDuplexStream<
      unknown,
      { prediction: Buffer; sequenceId: string; status: { code: number } | null }
    >;
    const done = collect(call);
    call.write({ model_name: 'mlp', sequenceId: 's1', input: { data: json([[1, 2, 3, 4]]) } });
    call.write({ model_name: 'mlp', sequenceId: 's1', input: { data: json([[1, 2]]) } });
    call.end();
    const { messages, error } = await done;
    assert.equal(error, null);
    assert.deepEqual(
      messages.map((m) => [m.sequenceId, m.status?.code ?? Status.OK]),
      [
        ['s1', Status.OK],
        ['s1', Status.INVALID_ARGUMENT],
      ],
    );
  });

  it('counts gRPC invocations in the same metrics as HTTP', async () => {
    const count = async () =>
      Number(/^mme_invocations_total (\d+)/m.exec((await request(`${t.managementUrl}/metrics`)).text)![1]);
    const before = await count();
    await unary(c.torchserve, 'Predictions', { model_name: 'mlp', input: { data: json([[1, 2, 3, 4]]) } });
    await failure(unary(c.kserve, 'ModelInfer', { model_name: 'nope', inputs: [] }));
    assert.equal(await count(), before + 2);
  });

  it('refuses a call for another :authority on a loopback listener (PERMISSION_DENIED), as HTTP refuses other Hosts', async () => {
    const foreign = grpcClients(t.server.grpc!.port, { 'grpc.default_authority': 'rebound.example:7070' });
    try {
      const err = await failure(unary(foreign.kserve, 'ServerLive'));
      assert.equal(err.code, Status.PERMISSION_DENIED);
      assert.match(err.details, /grpc_inference_address/);
    } finally {
      foreign.close();
    }
  });
});
