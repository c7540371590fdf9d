/**
 * What a config key is: its kind, default, allowed values and doc line. A section's table
 * (listeners.ts, workers.ts, …) writes each key once with these helpers; its ServerConfig field and
 * type are derived from the entry (types.ts's PlainConfig), so adding a key means writing its entry.
 */
import { timerLimit } from '../../util/timer-limit';

export type KeyKind = 'string' | 'int' | 'number' | 'bool' | 'address' | 'list' | 'regex' | 'enum' | 'url';

/** Allowed numeric values, with the wording used in error messages ("a whole number >= 1"). */
export interface Range {
  readonly allows: (n: number) => boolean;
  readonly text: string;
}

export interface KeySpec {
  readonly kind: KeyKind;
  /** As written in a file; null = unset. */
  readonly default: string | null;
  readonly range?: Range;
  /** For enum keys: the values allowed, in any case. */
  readonly values?: readonly string[];
  /** Shown in error messages when the default is not a useful example. */
  readonly example?: string;
  readonly doc: string;
  /** The ServerConfig field it is read into: absent = its name in camelCase; null = a section's resolver reads it. */
  readonly field?: string | null;
  /** From the key's unit to the field's (MiB to bytes). */
  readonly scale?: number;
}

export interface NamedKeySpec extends KeySpec {
  readonly name: string;
}

/** What an entry writes besides its kind, default and range. */
type Entry = Pick<KeySpec, 'doc' | 'example' | 'field' | 'scale'>;

const kind =
  <K extends KeyKind>(kind: K) =>
  <const D extends string | null, const E extends Entry>(dflt: D, entry: E) => ({ kind, default: dflt, ...entry });
export const bool = kind('bool');
export const address = kind('address');

/** Kinds whose default is no example of a value: the error messages show `example` instead. */
const exampled =
  <K extends KeyKind>(k: K) =>
  <const D extends string | null, const E extends Entry>(dflt: D, example: string, entry: E) =>
    kind(k)(dflt, { example, ...entry });
export const str = exampled('string');
export const list = exampled('list');
export const regex = exampled('regex');
/** An http(s) URL (an endpoint), checked at start rather than at its first use. */
export const url = exampled('url');

const numeric =
  <K extends 'int' | 'number'>(k: K) =>
  <const D extends string | null, const E extends Entry>(dflt: D, range: Range, entry: E) =>
    kind(k)(dflt, { range, ...entry });
export const int = numeric('int');
export const num = numeric('number');

/** One of `values`, in any case; the first that is not the default is the error messages' example. */
export const oneOf = <const V extends readonly string[], const E extends Entry>(
  values: V,
  dflt: V[number],
  entry: E,
) => ({
  kind: 'enum' as const,
  values,
  default: dflt,
  example: values.find((v) => v !== dflt),
  ...entry,
});

/** A section its own resolver reads: none of its keys is a ServerConfig field of its own. */
export const resolverRead = <const T extends Record<string, KeySpec>>(table: T) =>
  Object.fromEntries(Object.entries(table).map(([name, spec]) => [name, { ...spec, field: null }])) as {
    readonly [K in keyof T]: T[K] & { readonly field: null };
  };

export const atLeast = (min: number): Range => ({ allows: (n) => n >= min, text: `>= ${min}` });
export const above = (min: number): Range => ({ allows: (n) => n > min, text: `> ${min}` });
export const between = (min: number, max: number): Range => ({
  allows: (n) => n >= min && n <= max,
  text: `${min} to ${max}`,
});
/** A duration in `unit`s: at least `min` (more than, when `above`), and no longer than a timer can wait. */
export function duration(min: number, unitMs: number, unit: string, above = false): Range {
  const limit = timerLimit(unitMs, unit);
  return {
    allows: (n) => (above ? n > min : n >= min) && n <= limit.max,
    text: `${above ? '>' : '>='} ${min} and <= ${limit.text}`,
  };
}
export const seconds = (min: number): Range => duration(min, 1000, 'seconds');
export const secondsAboveZero = duration(0, 1000, 'seconds', true);
export const MiB = 2 ** 20;
/**
 * The largest body either way: one Buffer, and a batch's frame (several of them) must stay within
 * what the frame protocol's u32 lengths and a worker's read buffer can hold.
 */
export const MAX_BODY_BYTES = 1024 * MiB;
export const bodyBytes: Range = {
  allows: (n) => n >= 1 && n <= MAX_BODY_BYTES,
  text: `1 to ${MAX_BODY_BYTES} (1 GiB)`,
};
