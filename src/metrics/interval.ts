/**
 * One metric interval's samples, kept as CloudWatch statistic sets (count, sum, min, max): O(1)
 * memory per metric whatever the request rate, and exactly what PutMetricData takes.
 */
import { METRICS, type MetricDef } from './catalog';

/** One statistic set of one metric, for the whole endpoint (model null) or one model. */
export interface Series extends Readonly<Pick<Stat, 'count' | 'sum' | 'min' | 'max'>> {
  readonly def: MetricDef;
  readonly model: string | null;
}

export interface Snapshot {
  /** End of the interval, ms since the epoch. */
  readonly timestampMs: number;
  readonly series: readonly Series[];
}

/** The one number EMF and MMS lines carry for a series (see MetricDef.reduce). */
export function intervalValue(s: Series): number {
  return s.def.reduce === 'sum' ? s.sum : s.sum / s.count;
}

class Stat {
  count = 0;
  sum = 0;
  min = Infinity;
  max = -Infinity;

  add(value: number): void {
    this.count++;
    this.sum += value;
    if (value < this.min) this.min = value;
    if (value > this.max) this.max = value;
  }
}

/** A model's sets are made as its metrics first arrive: most models of 100 000 see a few metrics an interval. */
type Stats = Array<Stat | undefined>;
const newStats = (): Stats => [];

export class IntervalAggregator {
  #endpoint = newStats();
  /** Only models seen this interval, so unloaded models do not linger. */
  readonly #models = new Map<string, Stats>();

  constructor(readonly perModel: boolean) {}

  add(id: number, model: string, value: number): void {
    (this.#endpoint[id] ??= new Stat()).add(value);
    if (!this.perModel || model === '') return;
    let stats = this.#models.get(model);
    if (stats === undefined) this.#models.set(model, (stats = newStats()));
    (stats[id] ??= new Stat()).add(value);
  }

  /** Ends the interval: returns its non-empty series and starts a new one. */
  take(): Series[] {
    const out: Series[] = [];
    const collect = (stats: Stats, model: string | null) => {
      for (const def of METRICS) {
        const s = stats[def.id];
        if (s !== undefined && s.count > 0)
          out.push({ def, model, count: s.count, sum: s.sum, min: s.min, max: s.max });
      }
    };
    collect(this.#endpoint, null);
    for (const [model, stats] of this.#models) collect(stats, model);
    this.#endpoint = newStats();
    this.#models.clear();
    return out;
  }
}

export function gaugeSeries(def: MetricDef, value: number): Series {
  return { def, model: null, count: 1, sum: value, min: value, max: value };
}
