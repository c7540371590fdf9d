/**
 * What the planner sizes for: the models (name, .onnx size) and a request stream over them, read
 * from an inventory CSV (`model,size_mb,requests_per_minute`, turned into a seeded Poisson stream)
 * or from a trace CSV of real requests (`time_ms,model,size_mb`).
 */
import { seededRandom, weightedSampler } from '../../harness/random';
import type { SimRequest } from '../cache-sim/traces';
import { MiB } from './assumptions';

export interface WorkloadModel {
  readonly name: string;
  readonly weightsBytes: number;
}

export interface Workload {
  readonly models: readonly WorkloadModel[];
  /** In time order; `model` indexes `models`. */
  readonly requests: readonly SimRequest[];
  /** The span the requests cover, for per-minute rates. */
  readonly minutes: number;
}

export class InputError extends Error {}

/** Data rows of a CSV with the given header (order free, case-insensitive); blank and # lines skipped. */
function csvRows(
  text: string,
  where: string,
  columns: readonly string[],
): { line: number; get: (column: string) => string }[] {
  const lines = text
    .split(/\r?\n/)
    .map((l, i) => ({ line: i + 1, cells: l.split(',').map((c) => c.trim()) }))
    .filter(({ cells }) => cells.join('') !== '' && !cells[0].startsWith('#'));
  const header = lines.shift();
  const index = new Map(header?.cells.map((c, i) => [c.toLowerCase(), i]));
  const missing = columns.filter((c) => !index.has(c));
  if (missing.length > 0)
    throw new InputError(
      `${where}: the first line must be a header with the columns ${columns.join(',')} (missing ${missing.join(', ')})`,
    );
  return lines.map(({ line, cells }) => ({ line, get: (column: string) => cells[index.get(column)!] ?? '' }));
}

function positive(value: string, what: string, at: string, allowZero = false): number {
  const n = Number(value);
  if (value === '' || !Number.isFinite(n) || n < 0 || (!allowZero && n === 0))
    throw new InputError(
      `${at}: ${what} must be a ${allowZero ? 'non-negative' : 'positive'} number, got ${JSON.stringify(value)}`,
    );
  return n;
}

interface InventoryRow {
  readonly name: string;
  readonly sizeMiB: number;
  readonly perMinute: number;
}

export function parseInventory(text: string, where: string): InventoryRow[] {
  const seen = new Set<string>();
  const rows = csvRows(text, where, ['model', 'size_mb', 'requests_per_minute']).map(({ line, get }) => {
    const at = `${where}:${line}`;
    const name = get('model');
    if (name === '') throw new InputError(`${at}: the model name is empty`);
    if (seen.has(name))
      throw new InputError(`${at}: model ${name} is listed twice; merge its rows (add the requests per minute)`);
    seen.add(name);
    return {
      name,
      sizeMiB: positive(get('size_mb'), 'size_mb', at),
      perMinute: positive(get('requests_per_minute'), 'requests_per_minute', at, true),
    };
  });
  if (rows.length === 0 || rows.every((r) => r.perMinute === 0))
    throw new InputError(`${where}: no model has requests; list at least one with requests_per_minute > 0`);
  return rows;
}

/**
 * A Poisson stream at the inventory's total rate, each request drawn in proportion to its model's
 * rate: what independent clients produce. Seeded, so a plan is repeatable.
 */
export function inventoryWorkload(rows: readonly InventoryRow[], requests: number, seed: number): Workload {
  const random = seededRandom(seed);
  const pick = weightedSampler(
    rows.map((r) => r.perMinute),
    random,
  );
  const meanGapMs = 60_000 / rows.reduce((sum, r) => sum + r.perMinute, 0);
  let at = 0;
  const stream: SimRequest[] = Array.from({ length: requests }, () => {
    at += -Math.log(1 - random()) * meanGapMs;
    return { model: pick(), at };
  });
  return {
    models: rows.map((r) => ({ name: r.name, weightsBytes: r.sizeMiB * MiB })),
    requests: stream,
    minutes: at / 60_000,
  };
}

/** A recorded trace: one request per row; a model's size is taken from its first row. */
export function traceWorkload(text: string, where: string): Workload {
  const models: WorkloadModel[] = [];
  const indexOf = new Map<string, number>();
  let last = -Infinity;
  const requests = csvRows(text, where, ['time_ms', 'model', 'size_mb']).map(({ line, get }) => {
    const at = `${where}:${line}`;
    const time = positive(get('time_ms'), 'time_ms', at, true);
    if (time < last)
      throw new InputError(`${at}: time_ms goes backwards (${time} after ${last}); sort the trace by time`);
    last = time;
    const name = get('model');
    if (!indexOf.has(name)) {
      indexOf.set(name, models.length);
      models.push({ name, weightsBytes: positive(get('size_mb'), 'size_mb', at) * MiB });
    }
    return { model: indexOf.get(name)!, at: time };
  });
  if (requests.length < 2) throw new InputError(`${where}: a trace needs at least two requests`);
  const minutes = (requests.at(-1)!.at - requests[0].at) / 60_000;
  if (minutes <= 0)
    throw new InputError(
      `${where}: every request has the same time_ms; the planner needs a span of time to turn loads into a rate`,
    );
  return { models, requests, minutes };
}
