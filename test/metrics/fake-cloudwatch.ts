/**
 * A local stand-in for CloudWatch that speaks PutMetricData as @aws-sdk/client-cloudwatch 3.11xx
 * sends it: AWS JSON 1.0 (POST /, Content-Type application/x-amz-json-1.0, X-Amz-Target
 * GraniteServiceVersion20100801.PutMetricData, x-amzn-query-mode: true), SigV4-signed, the body
 * gzip-compressed once it reaches 10 KiB; timestamps arrive as epoch seconds. It records every
 * request and can fail, throttle, reject or hang on demand.
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import zlib from 'node:zlib';

export interface ReceivedDatum {
  MetricName: string;
  Unit?: string;
  Timestamp?: number;
  Dimensions?: { Name: string; Value: string }[];
  StatisticValues?: { SampleCount: number; Sum: number; Minimum: number; Maximum: number };
  Value?: number;
}

export interface ReceivedCall {
  namespace: string;
  data: ReceivedDatum[];
  gzip: boolean;
  /** The signed access key id, from the Authorization header. */
  accessKeyId: string;
}

/** ok: 200; fail: 500; throttle: CloudWatch's 400 Throttling; reject: 400 InvalidParameterValue; hang: no answer. */
export type Mode = 'ok' | 'fail' | 'throttle' | 'reject' | 'hang';

const kTarget = 'GraniteServiceVersion20100801.PutMetricData';

export class FakeCloudWatch {
  readonly calls: ReceivedCall[] = [];
  /** Requests that did not look like the SDK's PutMetricData, with the reason. */
  readonly protocolErrors: string[] = [];
  /** Modes for the next requests, in order; then `mode`. */
  readonly script: Mode[] = [];
  mode: Mode = 'ok';
  attempts = 0;
  readonly #sockets = new Set<Socket>();

  private constructor(readonly server: http.Server, readonly url: string) {
    server.on('connection', (s) => {
      this.#sockets.add(s);
      s.on('close', () => this.#sockets.delete(s));
    });
  }

  static async start(): Promise<FakeCloudWatch> {
    let fake: FakeCloudWatch | undefined;
    const server = http.createServer((req, res) => void fake!.handle(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    fake = new FakeCloudWatch(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    return fake;
  }

  /** Every datum received so far, across requests. */
  data(): ReceivedDatum[] {
    return this.calls.flatMap((c) => c.data);
  }

  async close(): Promise<void> {
    for (const s of this.#sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    this.attempts++;
    const mode = this.script.shift() ?? this.mode;
    if (mode === 'hang') return;

    const problem = this.check(req);
    if (problem !== null) {
      this.protocolErrors.push(problem);
      return reply(res, 400, 'InvalidAction', problem);
    }
    if (mode === 'fail') return reply(res, 500, 'InternalServiceError', 'injected failure');
    if (mode === 'throttle') return reply(res, 400, 'Throttling', 'Rate exceeded');
    if (mode === 'reject') return reply(res, 400, 'InvalidParameterValue', 'injected rejection');

    const gzip = req.headers['content-encoding'] === 'gzip';
    const raw = Buffer.concat(chunks);
    const body = JSON.parse((gzip ? zlib.gunzipSync(raw) : raw).toString('utf8')) as { Namespace: string; MetricData: ReceivedDatum[] };
    const accessKeyId = /Credential=([^/]+)\//.exec(String(req.headers.authorization))?.[1] ?? '';
    this.calls.push({ namespace: body.Namespace, data: body.MetricData, gzip, accessKeyId });
    res.writeHead(200, { 'content-type': 'application/x-amz-json-1.0' });
    res.end('{}');
  }

  private check(req: http.IncomingMessage): string | null {
    if (req.method !== 'POST' || req.url !== '/') return `expected POST /, got ${req.method} ${req.url}`;
    if (req.headers['content-type'] !== 'application/x-amz-json-1.0') return `content-type ${req.headers['content-type']}`;
    if (req.headers['x-amz-target'] !== kTarget) return `x-amz-target ${req.headers['x-amz-target']}`;
    if (!String(req.headers.authorization).startsWith('AWS4-HMAC-SHA256 Credential=')) return 'not SigV4-signed';
    return null;
  }
}

/** An AWS JSON 1.0 error; x-amzn-query-error carries the query-protocol code CloudWatch's SDK reads. */
function reply(res: http.ServerResponse, status: number, code: string, message: string): void {
  res.writeHead(status, {
    'content-type': 'application/x-amz-json-1.0',
    'x-amzn-query-error': `${code};${status >= 500 ? 'Receiver' : 'Sender'}`,
  });
  res.end(JSON.stringify({ __type: `com.amazonaws.cloudwatch#${code}`, message }));
}
