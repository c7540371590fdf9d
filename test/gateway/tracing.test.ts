/**
 * OpenTelemetry traces as a collector gets them: a real OTLP/HTTP receiver (node:http on port 0)
 * decodes what the server exports with the published OTLP .proto files (proto/opentelemetry), and
 * the spans are checked as data: names, parent links, the caller's trace id taken from an incoming
 * traceparent over HTTP and over gRPC, attributes. With the ratio at 0 (the default) a server process
 * must never load the SDK.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { Metadata, status as Status, type Client, type ServiceError } from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { grpcClients, type GrpcClients } from '../../harness/grpc-clients';
import { invoke, loadModel } from '../../harness/http-requests';
import { mlpModel, multiIoModel, writeModelDir } from '../../harness/onnx-models';
import { startTestServer, tempDir, type TestServer } from '../../harness/test-server';

// Compiled to dist/test/gateway/, so the repo root is three levels up.
const kRoot = path.resolve(__dirname, '../../..');
const kProtoDir = path.join(kRoot, 'proto');

interface DecodedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: string;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: Record<string, string | number | boolean>;
  status: { code?: string };
}

type KeyValue = { key: string; value: Record<string, unknown> & { value: string } };

/**
 * ExportTraceServiceRequest → its spans, with ids as hex and attributes as a plain object: decoded by
 * the collector service's own Export method, as a collector built from the .proto files would.
 */
function exportDecoder(): { decode(body: Buffer): { serviceName: string; spans: DecodedSpan[] } } {
  const def = protoLoader.loadSync('opentelemetry/proto/collector/trace/v1/trace_service.proto', {
    includeDirs: [kProtoDir],
    longs: String,
    enums: String,
    bytes: Buffer,
    defaults: true,
    oneofs: true,
  });
  const service = def['opentelemetry.proto.collector.trace.v1.TraceService'] as protoLoader.ServiceDefinition;
  // AnyValue is a oneof: `value` names the field that is set.
  const value = (v: KeyValue['value']) => {
    const x = v[v.value];
    return (v.value === 'intValue' ? Number(x) : x) as string | number | boolean;
  };
  const attrs = (list: KeyValue[]) => Object.fromEntries(list.map((a) => [a.key, value(a.value)]));
  return {
    decode(body) {
      const req = service.Export.requestDeserialize(body) as {
        resourceSpans: Array<{
          resource: { attributes: KeyValue[] };
          scopeSpans: Array<{ spans: Array<Record<string, unknown>> }>;
        }>;
      };
      const spans: DecodedSpan[] = [];
      let serviceName = '';
      for (const rs of req.resourceSpans) {
        serviceName = String(attrs(rs.resource.attributes)['service.name']);
        for (const ss of rs.scopeSpans) {
          for (const s of ss.spans) {
            spans.push({
              traceId: (s.traceId as Buffer).toString('hex'),
              spanId: (s.spanId as Buffer).toString('hex'),
              parentSpanId: (s.parentSpanId as Buffer).toString('hex'),
              name: s.name as string,
              kind: s.kind as string,
              startTimeUnixNano: s.startTimeUnixNano as string,
              endTimeUnixNano: s.endTimeUnixNano as string,
              attributes: attrs(s.attributes as KeyValue[]),
              status: s.status as { code?: string },
            });
          }
        }
      }
      return { serviceName, spans };
    },
  };
}

/** An OTLP/HTTP collector's trace endpoint: every export it took, decoded. */
async function otlpReceiver(): Promise<{
  url: string;
  spans: DecodedSpan[];
  serviceNames: Set<string>;
  paths: string[];
  close(): Promise<void>;
}> {
  const decoder = exportDecoder();
  const spans: DecodedSpan[] = [];
  const serviceNames = new Set<string>();
  const paths: string[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      paths.push(`${req.method} ${req.url} ${req.headers['content-type']}`);
      const got = decoder.decode(Buffer.concat(chunks));
      spans.push(...got.spans);
      serviceNames.add(got.serviceName);
      // An empty ExportTraceServiceResponse: full success.
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    serviceNames,
    paths,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

function grpcInfer(client: Client, req: unknown, metadata: Metadata): Promise<unknown> {
  const fn = (client as unknown as Record<string, (...args: unknown[]) => unknown>).ModelInfer.bind(client);
  return new Promise((resolve, reject) => {
    fn(req, metadata, {}, (err: ServiceError | null, res: unknown) => (err ? reject(err) : resolve(res)));
  });
}

const kHttpTrace = '0af7651916cd43dd8448eb211c80319c';
const kHttpParent = 'b7ad6b7169203331';
const kGrpcTrace = '4bf92f3577b34da6a3ce929d0e0e4736';
const kGrpcParent = '00f067aa0ba902b7';
const kUnsampled = '5e1f4a5b6c7d8e9f0a1b2c3d4e5f6a7b';

describe('OpenTelemetry traces: spans exported with OTLP/HTTP to a real receiver', () => {
  let receiver: Awaited<ReturnType<typeof otlpReceiver>>;
  let t: TestServer;
  let c: GrpcClients;
  before(async () => {
    receiver = await otlpReceiver();
    const store = tempDir('mme-store-');
    t = await startTestServer(
      `grpc_inference_port=0\notel_traces_sampler_ratio=1\notel_exporter_otlp_endpoint=${receiver.url}`,
      { store, env: {} },
    );
    // Loaded on demand by its first invoke: that request's trace has a load span.
    writeModelDir(t.store, 'mlp', mlpModel({ sizes: [4, 8, 3] }));
    const loaded = await loadModel(t, 'multi', writeModelDir(t.store, 'multi', multiIoModel()));
    assert.equal(loaded.status, 200, loaded.text);
    c = grpcClients(t.server.grpc!.port);

    const res = await invoke(
      t,
      'mlp',
      { instances: [[1, 2, 3, 4]] },
      {
        traceparent: `00-${kHttpTrace}-${kHttpParent}-01`,
        tracestate: 'vendor=x',
      },
    );
    assert.equal(res.status, 200, res.text);
    const metadata = new Metadata();
    metadata.set('traceparent', `00-${kGrpcTrace}-${kGrpcParent}-01`);
    await grpcInfer(
      c.kserve,
      {
        model_name: 'multi',
        inputs: [
          { name: 'a', datatype: 'FP32', shape: [1, 4], contents: { fp32_contents: [1, 2, 3, 4] } },
          { name: 'b', datatype: 'INT64', shape: [1, 2], contents: { int64_contents: ['7', '9'] } },
        ],
      },
      metadata,
    );
    // No traceparent: ratio 1 traces it in a trace of its own.
    assert.equal((await invoke(t, 'mlp', { instances: [[0, 0, 0, 0]] })).status, 200);
    assert.equal((await invoke(t, 'absent', [1])).status, 404);
    // A caller that did not sample its trace: ParentBased keeps its decision over the ratio.
    const unsampled = await invoke(
      t,
      'mlp',
      { instances: [[0, 0, 0, 0]] },
      { traceparent: `00-${kUnsampled}-${kHttpParent}-00` },
    );
    assert.equal(unsampled.status, 200);
    // Closing flushes the batch of spans to the receiver.
    c.close();
    await t.close();
  });
  after(async () => {
    await receiver.close();
  });

  const inTrace = (traceId: string) => receiver.spans.filter((s) => s.traceId === traceId);
  const serverSpan = (traceId: string) => {
    const spans = inTrace(traceId).filter((s) => s.kind === 'SPAN_KIND_SERVER');
    assert.equal(spans.length, 1, `one server span in trace ${traceId}`);
    return spans[0];
  };

  it('exports OTLP protobuf to the endpoint key + /v1/traces, under service.name mme-server', () => {
    assert.ok(receiver.paths.length > 0);
    for (const p of receiver.paths) assert.equal(p, 'POST /v1/traces application/x-protobuf');
    assert.deepEqual([...receiver.serviceNames], ['mme-server']);
    // What the ratio-0 test below looks for is what this server loaded.
    assert.ok(Object.keys(require.cache).some((k) => /@opentelemetry.sdk-trace-base/.test(k)));
  });

  it("an HTTP request's server span joins the caller's trace (traceparent), with load, queue, run and encode children", () => {
    const server = serverSpan(kHttpTrace);
    assert.equal(server.parentSpanId, kHttpParent);
    assert.equal(server.name, 'invoke mlp');
    assert.equal(server.attributes['mme.model.name'], 'mlp');
    assert.equal(server.attributes['http.response.status_code'], 200);
    assert.equal(server.attributes['mme.batch.size'], 1);
    assert.equal(server.attributes['mme.model.cache_hit'], false, 'its invoke loaded the model');
    assert.match(String(server.attributes['mme.request.id']), /^[0-9a-f-]{36}$/);
    const children = inTrace(kHttpTrace).filter((s) => s.parentSpanId === server.spanId);
    assert.deepEqual(children.map((s) => s.name).sort(), ['encode', 'load', 'queue', 'run']);
    const start = BigInt(server.startTimeUnixNano);
    const end = BigInt(server.endTimeUnixNano);
    for (const s of children) {
      assert.equal(s.kind, 'SPAN_KIND_INTERNAL');
      assert.ok(
        BigInt(s.startTimeUnixNano) >= start && BigInt(s.endTimeUnixNano) <= end,
        `${s.name} inside the request`,
      );
    }
    const run = children.find((s) => s.name === 'run')!;
    const pid = run.attributes['process.pid'];
    assert.ok(typeof pid === 'number' && pid > 0 && pid !== process.pid, 'the worker process ran it');
  });

  it("a gRPC call's server span joins the trace of its traceparent metadata; a loaded model is a cache hit, no load span", () => {
    const server = serverSpan(kGrpcTrace);
    assert.equal(server.parentSpanId, kGrpcParent);
    assert.equal(server.name, 'invoke multi');
    assert.equal(server.attributes['mme.model.cache_hit'], true);
    const children = inTrace(kGrpcTrace).filter((s) => s.parentSpanId === server.spanId);
    assert.deepEqual(children.map((s) => s.name).sort(), ['encode', 'queue', 'run']);
  });

  it("a caller's unsampled traceparent is followed: no span", () => {
    assert.deepEqual(inTrace(kUnsampled), []);
  });

  it('a request without a traceparent starts a trace of its own; a refused one is a span without children', () => {
    const roots = receiver.spans.filter((s) => s.kind === 'SPAN_KIND_SERVER' && s.parentSpanId === '');
    const mlp = roots.filter((s) => s.name === 'invoke mlp');
    assert.equal(mlp.length, 1);
    assert.equal(mlp[0].attributes['mme.model.cache_hit'], true);
    const refused = roots.filter((s) => s.name === 'invoke');
    assert.equal(refused.length, 1);
    assert.equal(refused[0].attributes['http.response.status_code'], 404);
    assert.equal(refused[0].attributes['mme.model.name'], '', 'a name the server does not know is never shown');
    assert.equal(receiver.spans.filter((s) => s.parentSpanId === refused[0].spanId).length, 0);
    // Only 5xx marks a server span as failed.
    assert.notEqual(refused[0].status.code, 'STATUS_CODE_ERROR');
  });
});

describe("OpenTelemetry traces of requests refused before the gateway: each joins its caller's trace", () => {
  const kToken = 'trace-token-3e9a';
  const traces = {
    unauthorized: '1a2b3c4d5e6f708192a3b4c5d6e7f801',
    crossSite: '2b3c4d5e6f708192a3b4c5d6e7f80112',
    unknown: '3c4d5e6f708192a3b4c5d6e7f8011223',
    grpcUnauthorized: '4d5e6f708192a3b4c5d6e7f801122334',
  };
  const kParent = '0123456789abcdef';
  let receiver: Awaited<ReturnType<typeof otlpReceiver>>;
  const statuses: Record<string, number> = {};
  before(async () => {
    receiver = await otlpReceiver();
    const t = await startTestServer(
      `inference_token=${kToken}\ngrpc_inference_port=0\notel_traces_sampler_ratio=1\notel_exporter_otlp_endpoint=${receiver.url}`,
      { env: {} },
    );
    const c = grpcClients(t.server.grpc!.port);
    try {
      const traced = (trace: string, extra: Record<string, string>) =>
        invoke(t, 'absent', [1], { traceparent: `00-${trace}-${kParent}-01`, ...extra });
      statuses.unauthorized = (await traced(traces.unauthorized, {})).status;
      statuses.crossSite = (await traced(traces.crossSite, { origin: 'http://evil.example' })).status;
      statuses.unknown = (await traced(traces.unknown, { authorization: `Bearer ${kToken}` })).status;
      const metadata = new Metadata();
      metadata.set('traceparent', `00-${traces.grpcUnauthorized}-${kParent}-01`);
      const refused = await grpcInfer(c.kserve, { model_name: 'absent' }, metadata).catch((e: ServiceError) => e);
      statuses.grpcUnauthorized = (refused as ServiceError).code === Status.UNAUTHENTICATED ? 401 : -1;
    } finally {
      c.close();
      // Closing flushes the batch of spans to the receiver.
      await t.close();
    }
  });
  after(async () => {
    await receiver?.close();
  });

  it("a guard's refusal (401 without inference_token over HTTP and gRPC, 403 cross-site) and a 404 after the guards: one server span each, under the caller's parent, no children", () => {
    const expected: Record<string, number> = { unauthorized: 401, crossSite: 403, unknown: 404, grpcUnauthorized: 401 };
    assert.deepEqual(statuses, expected);
    for (const [what, trace] of Object.entries(traces)) {
      const spans = receiver.spans.filter((s) => s.traceId === trace);
      assert.equal(spans.length, 1, `${what}: ${JSON.stringify(spans.map((s) => s.name))}`);
      const [span] = spans;
      assert.equal(span.kind, 'SPAN_KIND_SERVER', what);
      assert.equal(span.parentSpanId, kParent, what);
      assert.equal(span.name, 'invoke', what);
      assert.equal(span.attributes['mme.model.name'], '', what);
      assert.equal(span.attributes['http.response.status_code'], expected[what], what);
      assert.notEqual(span.status.code, 'STATUS_CODE_ERROR', what);
    }
  });
});

describe('OpenTelemetry traces off (otel_traces_sampler_ratio=0, the default)', () => {
  it('a server that answered invocations never loaded the SDK, the exporter or the propagator (require.cache of its process)', async () => {
    // A process of its own: this test process has loaded the SDK for the suite above. The API package
    // alone (no-op until an SDK registers) is prom-client's, loaded by every server, traced or not.
    const script = `
      const { startTestServer } = require(${JSON.stringify(path.join(kRoot, 'dist/harness/test-server.js'))});
      const { writeTinyMlp } = require(${JSON.stringify(path.join(kRoot, 'dist/harness/onnx-models.js'))});
      const { invoke } = require(${JSON.stringify(path.join(kRoot, 'dist/harness/http-requests.js'))});
      (async () => {
        const t = await startTestServer('otel_exporter_otlp_endpoint=http://127.0.0.1:9');
        writeTinyMlp(t.store);
        const res = await invoke(t, 'tiny', { instances: [new Array(16).fill(1)] });
        const absent = await invoke(t, 'absent', [1]);
        await t.close();
        const loaded = Object.keys(require.cache).filter((k) => /@opentelemetry.(?!api.)/.test(k));
        console.log(JSON.stringify({ status: res.status, absent: absent.status, tracer: t.server.tracer, loaded }));
      })();`;
    const out = await new Promise<string>((resolve, reject) =>
      execFile(process.execPath, ['-e', script], (err, stdout) =>
        err ? reject(new Error(err.message)) : resolve(stdout),
      ),
    );
    assert.deepEqual(JSON.parse(out.trim().split('\n').pop()!), { status: 200, absent: 404, tracer: null, loaded: [] });
  });
});
