/**
 * A local stand-in for CloudWatch that speaks PutMetricData as @aws-sdk/client-cloudwatch 3.11xx
 * sends it: AWS JSON 1.0 (POST /, Content-Type application/x-amz-json-1.0, X-Amz-Target
 * GraniteServiceVersion20100801.PutMetricData, x-amzn-query-mode: true), SigV4-signed, the body
 * gzip-compressed once it reaches 10 KiB; timestamps arrive as epoch seconds. It records every
 * request and can fail, throttle, reject or hang on demand.
 */
import type http from 'node:http';
import zlib from 'node:zlib';
import { AwsServiceFake, LocalAwsEndpoint, replyAwsJson, type AwsRequest } from '../helpers/aws-endpoint';

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

export class FakeCloudWatch extends AwsServiceFake {
  readonly calls: ReceivedCall[] = [];
  /** Requests that did not look like the SDK's PutMetricData, with the reason. */
  readonly protocolErrors: string[] = [];
  /** Modes for the next requests, in order; then `mode`. */
  readonly script: Mode[] = [];
  mode: Mode = 'ok';
  attempts = 0;
  /** Requests held unanswered ('hang') whose connection the client has not yet given up. */
  hanging = 0;

  private constructor(endpoint: LocalAwsEndpoint) {
    super(endpoint);
  }

  static start(): Promise<FakeCloudWatch> {
    return AwsServiceFake.startOn((endpoint) => new FakeCloudWatch(endpoint));
  }

  /** Every datum received so far, across requests. */
  data(): ReceivedDatum[] {
    return this.calls.flatMap((c) => c.data);
  }

  protected handle(req: AwsRequest, res: http.ServerResponse): void {
    this.attempts++;
    const mode = this.script.shift() ?? this.mode;
    if (mode === 'hang') {
      this.hanging++;
      res.once('close', () => this.hanging--);
      return;
    }

    const problem = this.check(req);
    if (problem !== null) {
      this.protocolErrors.push(problem);
      return reply(res, 400, 'InvalidAction', problem);
    }
    if (mode === 'fail') return reply(res, 500, 'InternalServiceError', 'injected failure');
    if (mode === 'throttle') return reply(res, 400, 'Throttling', 'Rate exceeded');
    if (mode === 'reject') return reply(res, 400, 'InvalidParameterValue', 'injected rejection');

    const gzip = req.headers['content-encoding'] === 'gzip';
    const body = JSON.parse((gzip ? zlib.gunzipSync(req.body) : req.body).toString('utf8')) as {
      Namespace: string;
      MetricData: ReceivedDatum[];
    };
    this.calls.push({ namespace: body.Namespace, data: body.MetricData, gzip, accessKeyId: req.accessKeyId });
    replyAwsJson(res, '1.0', 200, {});
  }

  private check(req: AwsRequest): string | null {
    if (req.method !== 'POST' || req.url !== '/') return `expected POST /, got ${req.method} ${req.url}`;
    if (req.headers['content-type'] !== 'application/x-amz-json-1.0')
      return `content-type ${req.headers['content-type']}`;
    if (req.headers['x-amz-target'] !== kTarget) return `x-amz-target ${req.headers['x-amz-target']}`;
    if (req.accessKeyId === '') return 'not SigV4-signed';
    return null;
  }
}

/** An AWS JSON 1.0 error; x-amzn-query-error carries the query-protocol code CloudWatch's SDK reads. */
function reply(res: http.ServerResponse, status: number, code: string, message: string): void {
  replyAwsJson(
    res,
    '1.0',
    status,
    { __type: `com.amazonaws.cloudwatch#${code}`, message },
    { 'x-amzn-query-error': `${code};${status >= 500 ? 'Receiver' : 'Sender'}` },
  );
}
