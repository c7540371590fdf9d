/**
 * A caller's deadline and priority through the gRPC door, with a real @grpc/grpc-js client: the
 * call's deadline (grpc-timeout), bounded by max_request_timeout, and ModelInfer's
 * parameters.timeout (microseconds) and parameters.priority. Nothing waits for time: each test
 * waits for the answer or for what the worker wrote, and a test that needs the call running at its
 * deadline tries again, with a longer deadline where it sets one, until the call reached the handler.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http2 from 'node:http2';
import path from 'node:path';
import { Metadata, status as Status, type ServiceError } from '@grpc/grpc-js';
import { holdingHandler } from '../../harness/fault-handlers';
import { grpcClients, type GrpcClients } from '../../harness/grpc-clients';
import { addModel, writeModelDir } from '../../harness/onnx-models';
import { waitFor } from '../../harness/process-probes';
import { loadModel } from '../../harness/http-requests';
import { startTestServer, tempDir, type TestServer } from '../../harness/test-server';

type Infer = (
  req: unknown,
  metadata: Metadata,
  options: { deadline?: number },
  cb: (err: ServiceError | null) => void,
) => void;

describe('request deadline and priority: the gRPC door', () => {
  let t: TestServer;
  let c: GrpcClients;
  const dir = tempDir('mme-grpc-deadline-');
  const log = path.join(dir, 'hold.log');
  const release = path.join(dir, 'hold.release');
  const lines = () => (fs.existsSync(log) ? fs.readFileSync(log, 'utf8').split('\n') : []);

  before(async () => {
    t = await startTestServer('grpc_inference_port=0\nmax_request_timeout=2\npriority_levels=2');
    const r = await loadModel(
      t,
      'hold',
      writeModelDir(t.store, 'hold', addModel(), { 'handler.js': holdingHandler(log, release) }),
    );
    assert.equal(r.status, 200, r.text);
    c = grpcClients(t.server.grpc!.port);
  });
  after(async () => {
    fs.writeFileSync(release, '');
    c.close();
    await t.close();
  });

  /** ModelInfer on `hold` tagged `tag`; resolves with the call's error (null: it succeeded). */
  function infer(tag: string, parameters: object = {}, deadlineMs?: number): Promise<ServiceError | null> {
    const metadata = new Metadata();
    metadata.set('x-test-tag', tag);
    const req = {
      model_name: 'hold',
      inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 16] }],
      raw_input_contents: [Buffer.alloc(64)],
      parameters,
    };
    const fn = (c.kserve as unknown as { ModelInfer: Infer }).ModelInfer.bind(c.kserve);
    return new Promise((resolve) =>
      fn(req, metadata, deadlineMs === undefined ? {} : { deadline: Date.now() + deadlineMs }, resolve),
    );
  }

  /**
   * Calls until one reaches the handler before its deadline passes (on a busy machine one may pass in
   * the queue); `call` gets the attempt's number and tag. Resolves with that call's error and tag.
   */
  async function runningAtDeadline(
    name: string,
    call: (attempt: number, tag: string) => Promise<ServiceError | null>,
  ): Promise<{ err: ServiceError; tag: string }> {
    for (let attempt = 0; attempt < 4; attempt++) {
      const tag = `${name}${attempt}`;
      const err = await call(attempt, tag);
      assert.equal(err?.code, Status.DEADLINE_EXCEEDED, err?.details);
      if (lines().includes(tag)) return { err, tag };
    }
    return assert.fail('no call reached the handler before its deadline in 4 tries');
  }
  const doubling = (attempt: number) => 200 * 2 ** attempt;

  it('cuts a call deadline past max_request_timeout to it: DEADLINE_EXCEEDED from the server, the handler cancelled', async () => {
    const { err, tag } = await runningAtDeadline('capped', (_, tag) => infer(tag, {}, 60_000));
    assert.deepEqual(err.metadata.get('mme-error-code'), ['MME_ERR_DEADLINE_EXCEEDED']);
    await waitFor(() => lines().includes(`cancelled ${tag}`), 'the handler to see the cancellation');
  });

  it("honours the client's own deadline (grpc-timeout): DEADLINE_EXCEEDED, the handler cancelled", async () => {
    const { tag } = await runningAtDeadline('short', (attempt, tag) => infer(tag, {}, doubling(attempt)));
    await waitFor(() => lines().includes(`cancelled ${tag}`), 'the handler to see the cancellation');
  });

  it('honours parameters.timeout in microseconds and takes parameters.priority', async () => {
    const { err, tag } = await runningAtDeadline('param', (attempt, tag) =>
      infer(tag, { timeout: { int64_param: String(doubling(attempt) * 1000) }, priority: { int64_param: '1' } }),
    );
    assert.deepEqual(err.metadata.get('mme-error-code'), ['MME_ERR_DEADLINE_EXCEEDED']);
    await waitFor(() => lines().includes(`cancelled ${tag}`), 'the handler to see the cancellation');
  });

  it('refuses a priority outside priority_levels, or a timeout that is no whole number, with INVALID_ARGUMENT', async () => {
    const priority = await infer('bad', { priority: { int64_param: '3' } });
    assert.equal(priority?.code, Status.INVALID_ARGUMENT);
    assert.match(
      priority.details,
      /parameters.priority is "3"; set it to a whole number from 1 \(first\) to 2 \(priority_levels\)/,
    );
    const timeout = await infer('bad', { timeout: { string_param: 'soon' } });
    assert.equal(timeout?.code, Status.INVALID_ARGUMENT);
    assert.match(timeout.details, /parameters.timeout is "soon"/);
    assert.ok(!lines().includes('bad'), 'neither reached the handler');
  });

  /** A raw HTTP/2 call to ServerLive with `grpcTimeout` as its grpc-timeout (a grpc-js client sends only well-formed ones); its status and headers. */
  function rawCall(grpcTimeout: string): Promise<http2.IncomingHttpHeaders> {
    return new Promise((resolve, reject) => {
      const session = http2.connect(`http://127.0.0.1:${t.server.grpc!.port}`);
      session.on('error', reject);
      const req = session.request({
        ':method': 'POST',
        ':path': '/inference.GRPCInferenceService/ServerLive',
        'content-type': 'application/grpc',
        te: 'trailers',
        'grpc-timeout': grpcTimeout,
      });
      let head: http2.IncomingHttpHeaders = {};
      req.on('response', (h) => {
        head = h;
      });
      // A trailers-only answer carries its status in the response head; otherwise it comes in the trailers.
      req.on('trailers', (trailers) => {
        head = { ...head, ...trailers };
      });
      req.on('end', () => {
        session.close();
        resolve(head);
      });
      req.on('error', reject);
      req.resume();
      req.end(Buffer.alloc(5)); // one empty message
    });
  }

  it('refuses a malformed grpc-timeout with INVALID_ARGUMENT (not INTERNAL), as every other malformed request', async () => {
    for (const value of ['abc', '', 'S']) {
      const head = await rawCall(value);
      assert.equal(head['grpc-status'], String(Status.INVALID_ARGUMENT), `grpc-timeout ${JSON.stringify(value)}`);
      assert.equal(head['mme-error-code'], 'MME_ERR_INVALID_INPUT');
      assert.match(decodeURIComponent(String(head['grpc-message'])), /^grpc-timeout is ".*"; set it to 1 to 8 digits/);
    }
    assert.equal((await rawCall('1S'))['grpc-status'], String(Status.OK), 'a well-formed one is served');
  });
});
