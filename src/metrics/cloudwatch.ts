/**
 * PutMetricData, one request per interval (more only past the API's limits), sent by one
 * background loop. While CloudWatch is unreachable the data wait in a bounded queue with
 * exponential back-off; past the bound the oldest are dropped and counted. Nothing here is awaited
 * by the server except close().
 */
import type { CloudWatchClient, MetricDatum } from '@aws-sdk/client-cloudwatch';
import { realClock, type Timers } from '../util/clock';
import { deadlineSignal } from '../util/deadline-signal';
import { seriesDimensions, type Dimension } from './dimensions';
import type { Snapshot } from './interval';
import type { IntervalSink } from './sink';

type Sdk = typeof import('@aws-sdk/client-cloudwatch');

export interface CloudWatchSinkOptions {
  readonly namespace: string;
  /** null = the SDK's default chain. */
  readonly region: string | null;
  readonly endpoint: string | null;
  readonly maxBuffered: number;
  readonly dimensions: readonly Dimension[];
  readonly log: (line: string) => void;
  /** First retry delay; doubles per failure up to maxBackoffMs (jittered down by up to half). */
  readonly backoffMs?: number;
  readonly maxBackoffMs?: number;
  /** One request's limit: a hung endpoint must not stall the loop for the SDK's 15 minutes. */
  readonly requestTimeoutMs?: number;
  /** The back-off, request and close timers run on these, so a test can drive them on virtual time. */
  readonly timers?: Timers;
}

export class CloudWatchSink implements IntervalSink {
  readonly name = 'cloudwatch';
  dropped = 0;
  sent = 0;
  /**
   * Made at the first send: the SDK is megabytes of heap that every mark-compact of the server walks,
   * and a server that never sends need not hold it.
   */
  #sdk: Promise<{ client: CloudWatchClient; sdk: Sdk }> | null = null;
  readonly #queue: MetricDatum[] = [];
  readonly #abort = new AbortController();
  #loop: Promise<void> | null = null;
  #failures = 0;
  #wake: (() => void) | null = null;
  #closing = false;
  readonly #timers: Timers;

  constructor(readonly opts: CloudWatchSinkOptions) {
    this.#timers = opts.timers ?? realClock;
  }

  #connect(): Promise<{ client: CloudWatchClient; sdk: Sdk }> {
    const { opts } = this;
    this.#sdk ??= import('@aws-sdk/client-cloudwatch').then((sdk) => ({
      sdk,
      client: new sdk.CloudWatchClient({
        ...(opts.region === null ? {} : { region: opts.region }),
        ...(opts.endpoint === null ? {} : { endpoint: opts.endpoint }),
        // This loop retries with its own back-off and bound; SDK retries would hide both.
        maxAttempts: 1,
        // The request's limit is #send's timer, on the sink's timers rather than the SDK's real ones.
        requestHandler: { connectionTimeout: 5_000 },
      }),
    }));
    return this.#sdk;
  }

  get queued(): number {
    return this.#queue.length;
  }

  write(snapshot: Snapshot): void {
    if (this.#closing) return;
    // A loop, not push(...): an interval with many models can exceed the arguments limit.
    for (const datum of toDatums(snapshot, this.opts.dimensions)) this.#queue.push(datum);
    this.#trim();
    this.#startLoop();
  }

  async close(timeoutMs: number): Promise<void> {
    this.#closing = true;
    this.#wake?.();
    this.#startLoop();
    const timer = this.#timers.setTimeout(() => this.#abort.abort(), timeoutMs);
    await this.#loop;
    this.#timers.clearTimeout(timer);
    this.dropped += this.#queue.splice(0).length;
    (await this.#sdk)?.client.destroy();
  }

  #startLoop(): void {
    this.#loop ??= this.#run().finally(() => {
      this.#loop = null;
    });
  }

  /** Sends until the queue is empty; while closing, gives up at the first failure. */
  async #run(): Promise<void> {
    while (this.#queue.length > 0 && !this.#abort.signal.aborted) {
      const batch = this.#queue.splice(0, batchLength(this.#queue));
      const error = await this.#send(batch);
      if (error === null) {
        if (this.#failures > 0)
          this.opts.log(
            `metrics: CloudWatch PutMetricData works again after ${this.#failures} failed attempts (${this.dropped} data points dropped so far)`,
          );
        this.#failures = 0;
        this.sent += batch.length;
        continue;
      }
      const retry = retryable(error) && !this.#closing;
      if (this.#failures++ === 0)
        this.opts.log(
          `metrics: CloudWatch PutMetricData failed: ${describe(error)}; ${retry ? 'retrying with back-off' : 'dropping this batch'}`,
        );
      if (!retry) {
        this.dropped += batch.length;
        if (this.#closing) return;
        continue;
      }
      this.#queue.unshift(...batch);
      this.#trim();
      await this.#sleep(this.#backoffMs());
    }
  }

  async #send(batch: MetricDatum[]): Promise<unknown> {
    const ms = this.opts.requestTimeoutMs ?? 10_000;
    const timeout = () => Object.assign(new Error(`no answer within ${ms} ms`), { name: 'TimeoutError' });
    const limit = deadlineSignal(this.#abort.signal, ms, timeout, this.#timers);
    try {
      const { client, sdk } = await this.#connect();
      const command = new sdk.PutMetricDataCommand({ Namespace: this.opts.namespace, MetricData: batch });
      await client.send(command, { abortSignal: limit.signal });
      return null;
    } catch (err) {
      return limit.signal.aborted && !this.#abort.signal.aborted
        ? limit.signal.reason
        : (err ?? new Error('unknown error'));
    } finally {
      limit.done();
    }
  }

  /** Bounded memory: the oldest data go first, as they are the least useful to alarms. */
  #trim(): void {
    const excess = this.#queue.length - this.opts.maxBuffered;
    if (excess > 0) {
      this.#queue.splice(0, excess);
      this.dropped += excess;
    }
  }

  #backoffMs(): number {
    const base = this.opts.backoffMs ?? 1000;
    const full = Math.min(this.opts.maxBackoffMs ?? 60_000, base * 2 ** Math.min(this.#failures - 1, 30));
    return full / 2 + Math.random() * (full / 2);
  }

  /** A wait that close() cuts short; unref'd so it never keeps the process alive. */
  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        this.#timers.clearTimeout(timer);
        this.#wake = null;
        resolve();
      };
      const timer = this.#timers.setTimeout(done, ms);
      timer.unref();
      this.#wake = done;
    });
  }
}

/** Throttling, server errors and network failures pass; a request CloudWatch rejects never will. */
function retryable(err: unknown): boolean {
  const e = err as { $retryable?: unknown; $metadata?: { httpStatusCode?: number }; name?: string };
  const status = e.$metadata?.httpStatusCode;
  if (e.$retryable || status === undefined || status >= 500 || status === 429 || status === 408) return true;
  return /throttl/i.test(e.name ?? '');
}

function describe(err: unknown): string {
  const e = err as { name?: string; message?: string; $metadata?: { httpStatusCode?: number } };
  const status = e.$metadata?.httpStatusCode;
  return `${e.name ?? 'Error'}${status === undefined ? '' : ` (HTTP ${status})`}: ${e.message ?? String(err)}`;
}

/**
 * PutMetricData limits (API reference, as of SDK 3.1164): at most 1000 metric data per request and
 * 1 MB per HTTP POST. The byte budget leaves room for the envelope and counts the body before the
 * SDK's gzip, so a request is under the limit compressed or not.
 */
const kMaxDatumsPerRequest = 1000;
const kMaxRequestBytes = 1_000_000 - 16_384;

function toDatums(snapshot: Snapshot, endpoint: readonly Dimension[]): MetricDatum[] {
  const timestamp = new Date(snapshot.timestampMs);
  return snapshot.series.map((s) => ({
    MetricName: s.def.name,
    Unit: s.def.unit,
    Timestamp: timestamp,
    Dimensions: seriesDimensions(endpoint, s.model).map(([Name, Value]) => ({ Name, Value })),
    StatisticValues: { SampleCount: s.count, Sum: s.sum, Minimum: s.min, Maximum: s.max },
  }));
}

/** How many data from the front of `queue` fit in one request (at least one). */
function batchLength(queue: readonly MetricDatum[]): number {
  let bytes = 0;
  let n = 0;
  while (n < queue.length && n < kMaxDatumsPerRequest) {
    // JSON size of the datum; the Date stringifies longer than the epoch seconds on the wire.
    bytes += JSON.stringify(queue[n]).length + 1;
    if (bytes > kMaxRequestBytes && n > 0) break;
    n++;
  }
  return n;
}
