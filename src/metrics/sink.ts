import type { Snapshot } from './interval';

/** A destination that receives each finished interval. */
export interface IntervalSink {
  /** For logs and the mme_metrics_dropped_total label. */
  readonly name: string;
  /** Data discarded so far because the destination could not take it. */
  readonly dropped: number;
  /** Takes the interval and returns at once: delivery never holds up the caller. */
  write(snapshot: Snapshot): void;
  close(timeoutMs: number): Promise<void>;
}
