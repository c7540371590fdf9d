/**
 * The server's one log (log_format, log_level): text lines (ISO time, level, message) or JSON lines
 * written by pino. Every module logs through a plain `log(line)` function handed down from here, so
 * the call sites stay one-argument calls; the fields a JSON line carries are read from conventions
 * those lines already follow — "[model] …", "request <id> …" / "request-id=<id>", "worker <id> (pid N)"
 * — unless the caller passes them (worker output does: the process it came from is known there).
 */
import pino from 'pino';

export const kLogFormats = ['text', 'json'] as const;
export type LogFormat = (typeof kLogFormats)[number];
/** Least to most severe. */
export const kLogLevels = ['info', 'warn', 'error'] as const;
export type LogLevel = (typeof kLogLevels)[number];

export interface LogFields {
  level?: LogLevel;
  model?: string;
  requestId?: string;
  /** A worker process or shared host id, with its pid. */
  worker?: string;
  pid?: number;
}

export type Log = (line: string, fields?: LogFields) => void;

/**
 * The level of a line whose caller did not give one, from its wording: a failure the operator must
 * look at is an error, something the server worked around (a restart, a kill, a drop) a warning.
 * A 4xx is the client's mistake and stays info; the request's status decides before any wording.
 */
const kLevelRules: ReadonlyArray<readonly [RegExp, LogLevel]> = [
  [/^request \S+ .*?: 5\d\d /, 'error'],
  [/^request \S+ /, 'info'],
  [/works again|^ACCESS /, 'info'],
  [/internal error|failed|cannot |could not |protocol error/, 'error'],
  [/killing|killed|restarting|exceeded|still running|did not|dropped|ignored|exiting now|recycling/, 'warn'],
];

const kSubject = /^\[([^\]\s]+)\] /;
const kRequest = /^request (\S+) |\brequest-id=(\S+)/;
const kWorker = /\bworker (\S+) \(pid (\d+)\)/;

/**
 * A duration for a log line, to the precision a reader can use: three significant figures below
 * 100 ms ("3.74 ms", "42.1 ms"), whole milliseconds above ("1235 ms"); not 3.7411920000013197.
 */
export function roundedMs(ms: number): string {
  const places = ms >= 100 ? 0 : ms >= 10 ? 1 : 2;
  return `${Number(ms.toFixed(places))} ms`;
}

/** `line`'s level and context fields, the caller's `given` ones first. */
export function lineFields(line: string, given: LogFields = {}): Required<Pick<LogFields, 'level'>> & LogFields {
  const fields: LogFields = {};
  const subject = kSubject.exec(line)?.[1];
  // A bracketed worker id (its output, a shared host's event) is the worker, not a model.
  if (subject !== undefined && given.worker === undefined) fields.model = subject;
  const request = kRequest.exec(line);
  const id = request?.[1] ?? request?.[2];
  if (id !== undefined && id !== '-') fields.requestId = id;
  const worker = kWorker.exec(line);
  if (worker) {
    fields.worker = worker[1];
    fields.pid = Number(worker[2]);
  }
  const level = kLevelRules.find(([re]) => re.test(line))?.[1] ?? 'info';
  return { level, ...fields, ...given };
}

/** A log writing to `fd` (stdout by default) synchronously, so the last line before an exit is not lost. */
export function createLog(opts: { format: LogFormat; level: LogLevel }, fd = 1): Log {
  const destination = pino.destination({ dest: fd, sync: true });
  const least = kLogLevels.indexOf(opts.level);
  if (opts.format === 'text') {
    return (line, given) => {
      const { level } = lineFields(line, given);
      if (kLogLevels.indexOf(level) >= least)
        destination.write(`${new Date().toISOString()} ${level.toUpperCase().padEnd(5)} ${line}\n`);
    };
  }
  const logger = pino(
    {
      level: opts.level,
      base: null,
      timestamp: () => `,"ts":"${new Date().toISOString()}"`,
      formatters: { level: (label) => ({ level: label }) },
    },
    destination,
  );
  return (line, given) => {
    const { level, ...fields } = lineFields(line, given);
    logger[level](fields, line);
  };
}
