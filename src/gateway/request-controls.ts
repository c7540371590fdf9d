/** A caller's deadline and priority, whichever door they came through: checked and bounded once, here. */
import { errorOf, quoteValue } from '../errors';
import { MAX_TIMER_MS } from '../util/timer-limit';

const invalid = errorOf('MME_ERR_INVALID_INPUT');

export interface ControlLimits {
  /** 0 = no cap but the model's response timeout. */
  maxRequestTimeoutMs: number;
  /** 1 = off. */
  priorityLevels: number;
}

export const kNoControls: ControlLimits = { maxRequestTimeoutMs: 0, priorityLevels: 1 };

/** A header counts milliseconds, OIP's parameter microseconds (as Triton). */
export interface TimeUnit {
  ms: number;
  name: string;
}
export const MILLISECONDS: TimeUnit = { ms: 1, name: 'milliseconds' };
export const MICROSECONDS: TimeUnit = { ms: 0.001, name: 'microseconds' };

/** A header's text, a JSON number or a gRPC int64 (a decimal string) as a whole number, or NaN. */
function wholeNumber(value: unknown): number {
  if (typeof value === 'number') return Number.isSafeInteger(value) ? value : Number.NaN;
  return typeof value === 'string' && /^\s*\d{1,15}\s*$/.test(value) ? Number(value) : Number.NaN;
}

/** Milliseconds bounded by max_request_timeout and what a timer can wait; null for 0 (none, as Triton's). */
export function requestTimeoutMs(value: unknown, unit: TimeUnit, where: string, limits: ControlLimits): number | null {
  const n = wholeNumber(value);
  if (!(n >= 0))
    throw invalid(
      `${where} is ${quoteValue(value)}; set it to a whole number of ${unit.name} (0 = no deadline), or leave it out`,
    );
  if (n === 0) return null;
  return Math.min(n * unit.ms, limits.maxRequestTimeoutMs || MAX_TIMER_MS, MAX_TIMER_MS);
}

/** 1 goes first, 0 = the default level (undefined); outside 0..priority_levels it is 400. */
export function requestPriority(value: unknown, where: string, limits: ControlLimits): number | undefined {
  const n = wholeNumber(value);
  const levels = limits.priorityLevels;
  if (!(n >= 0 && n <= levels))
    throw invalid(
      `${where} is ${quoteValue(value)}; set it to a whole number from 1 (first) to ${levels} (priority_levels), or 0 or nothing for the default level`,
    );
  return n === 0 ? undefined : n - 1;
}
