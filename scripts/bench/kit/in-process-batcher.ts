/**
 * Dynamic batching in one process, for the in-process limit (baseline-server.ts) of the batching
 * row: requests collected as the server's dispatcher collects them for one worker (MMS's pollBatch),
 * their inputs stacked into one tensor each, one session run, the outputs split back by the rows
 * each request brought; with the workers' own Tensor.concat and split.
 */
import { emptyFeeds, type Feeds } from '../../../src/worker-process/json-codec';
import { Tensor, type PlainTensor } from '../../../src/worker-process/tensor';

/** The model's batch settings the server is given in the same row. */
export interface BatchWindow {
  batchSize: number;
  maxBatchDelayMs: number;
}

/** Each request's feeds joined along axis 0, one tensor per input, and the rows each request brought. */
export function stackFeeds(members: readonly Feeds[], inputNames: readonly string[]): { feeds: Feeds; rows: number[] } {
  const feeds = emptyFeeds();
  for (const name of inputNames) feeds[name] = Tensor.concat(members.map((f) => f[name]));
  return { feeds, rows: members.map((f) => f[inputNames[0]].dims[0]) };
}

/** One run's outputs split back into each request's, by the rows each brought (stackFeeds' `rows`). */
export function splitOutputs(outputs: Record<string, PlainTensor>, rows: readonly number[]): Feeds[] {
  const pieces = Object.entries(outputs).map(([name, t]) => [name, Tensor.of(t, name).split(rows)] as const);
  return rows.map((_, k) => {
    const answer = emptyFeeds();
    for (const [name, split] of pieces) answer[name] = split[k];
    return answer;
  });
}

interface Waiting {
  feeds: Feeds;
  resolve(outputs: Feeds): void;
  reject(err: unknown): void;
}

/**
 * One session, one batch at a time, as one worker: with the session free and fewer than a batch
 * waiting, wait up to `maxBatchDelayMs` for it to fill, then run what has arrived
 * (src/server/models/dispatcher.ts does the same).
 */
export class InProcessBatcher {
  readonly #queue: Waiting[] = [];
  #running = false;
  #timer: NodeJS.Timeout | null = null;
  #windowOver = false;

  constructor(
    private readonly window: BatchWindow,
    private readonly inputNames: readonly string[],
    private readonly run: (feeds: Feeds) => Promise<Record<string, PlainTensor>>,
  ) {}

  submit(feeds: Feeds): Promise<Feeds> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ feeds, resolve, reject });
      this.#dispatch();
    });
  }

  #dispatch(): void {
    if (this.#running || this.#queue.length === 0) return;
    const { batchSize, maxBatchDelayMs } = this.window;
    if (this.#queue.length < batchSize && !this.#windowOver && maxBatchDelayMs > 0) {
      this.#timer ??= setTimeout(() => {
        this.#timer = null;
        this.#windowOver = true;
        this.#dispatch();
      }, maxBatchDelayMs);
      return;
    }
    this.#windowOver = false;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    const batch = this.#queue.splice(0, batchSize);
    this.#running = true;
    void this.#runBatch(batch).finally(() => {
      this.#running = false;
      this.#dispatch();
    });
  }

  async #runBatch(batch: Waiting[]): Promise<void> {
    try {
      const { feeds, rows } = stackFeeds(
        batch.map((w) => w.feeds),
        this.inputNames,
      );
      const answers = splitOutputs(await this.run(feeds), rows);
      batch.forEach((w, k) => w.resolve(answers[k]));
    } catch (err) {
      for (const w of batch) w.reject(err);
    }
  }
}
