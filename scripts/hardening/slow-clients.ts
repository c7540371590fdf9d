/**
 * T-H2 slowloris_headers_and_body: sockets that trickle their headers a byte at a time, and sockets
 * that send complete headers and then a body at a few bytes a second, while a probe opens a fresh
 * connection for GET /ping at a steady pace until the server has closed every slow socket. Reports
 * when the server closed each slow socket and how long each probe took to connect and to be answered.
 */
import net from 'node:net';
import { parseResponses, timedPing, type TimedPing } from '../../harness/raw-http';
import { pingLatencyProblems, pingProblems } from './ping-bounds';

export interface SlowClientsOptions {
  port: number;
  headerSockets: number;
  bodySockets: number;
  /** Gap between the header bytes of one socket. */
  headerByteEveryMs: number;
  /** Gap between the body bytes of one socket. */
  bodyByteEveryMs: number;
  /**
   * The probe runs until every slow socket is closed and it has sent `minProbes`; past this bound
   * the sockets still open are reported as never closed (null).
   */
  boundMs: number;
  minProbes: number;
  probeEveryMs?: number;
}

export interface SlowClientsResult {
  /** When the server closed each header socket (ms after it was opened), or null if it never did. */
  headerClosedMs: Array<number | null>;
  bodyClosedMs: Array<number | null>;
  /** Statuses the slow sockets got before being closed (Node answers 408 to a timed-out request). */
  slowStatuses: number[];
  /** GET /ping on a fresh connection, every probeEveryMs while slow sockets were open. */
  probes: TimedPing[];
}

interface Slow {
  closedMs: number | null;
  received: Buffer;
}

function slowSocket(port: number, head: string, text: string, everyMs: number): { state: Slow; socket: net.Socket } {
  const t0 = Date.now();
  const state: Slow = { closedMs: null, received: Buffer.alloc(0) };
  const socket = net.connect(port, '127.0.0.1');
  let i = 0;
  let timer: NodeJS.Timeout | undefined;
  // The trickle starts once the head is written: a byte written while connecting would be queued
  // ahead of it (a connect slower than everyMs, on a busy machine), and the server would rightly
  // answer 400 to a request that begins with it.
  socket.on('connect', () => {
    socket.write(head);
    timer = setInterval(() => {
      if (!socket.destroyed) socket.write(text[i++ % text.length]);
    }, everyMs);
  });
  socket.on('data', (d: Buffer) => (state.received = Buffer.concat([state.received, d])));
  socket.on('error', () => undefined);
  socket.on('close', () => {
    clearInterval(timer);
    state.closedMs = Date.now() - t0;
  });
  return { state, socket };
}

export async function runSlowClients(o: SlowClientsOptions): Promise<SlowClientsResult> {
  // A header that never ends, and a POST whose declared body arrives a byte at a time.
  const headerSockets = Array.from({ length: o.headerSockets }, () =>
    slowSocket(
      o.port,
      'G',
      'ET /ping HTTP/1.1\r\nHost: localhost\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa',
      o.headerByteEveryMs,
    ),
  );
  const bodySockets = Array.from({ length: o.bodySockets }, () =>
    slowSocket(
      o.port,
      'POST /models HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 60000\r\n\r\n',
      ' ',
      o.bodyByteEveryMs,
    ),
  );
  const result: SlowClientsResult = { headerClosedMs: [], bodyClosedMs: [], slowStatuses: [], probes: [] };
  const open = () => [...headerSockets, ...bodySockets].some((s) => s.state.closedMs === null);
  const end = Date.now() + o.boundMs;
  while ((open() || result.probes.length < o.minProbes) && Date.now() < end) {
    result.probes.push(await timedPing(o.port));
    await new Promise((r) => setTimeout(r, o.probeEveryMs ?? 100));
  }
  for (const { state, socket } of [...headerSockets, ...bodySockets]) {
    for (const r of parseResponses(state.received, true, false).responses) result.slowStatuses.push(r.status);
    socket.destroy();
  }
  result.headerClosedMs = headerSockets.map((s) => s.state.closedMs);
  result.bodyClosedMs = bodySockets.map((s) => s.state.closedMs);
  return result;
}

export interface SlowClientLimits {
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  /** How often Node enforces the two (listener.ts: half the headers timeout, at most 30 s). */
  checkMs: number;
}

/**
 * Every slow socket closed, what they were answered 408 (Request Timeout) and nothing else, and
 * every /ping answered, `minProbes` at least; with `timings` (the long runs, not `npm test`, where a
 * busy machine would fail them) also the plan's close bounds (timeout + check period, doubled for a
 * shared 2-core machine) and the /ping bounds.
 */
export function slowClientProblems(
  r: SlowClientsResult,
  l: SlowClientLimits,
  minProbes: number,
  timings = false,
): string[] {
  const problems: string[] = [];
  const late = (closed: Array<number | null>, bound: number) =>
    closed.filter((ms) => ms === null || (timings && ms > bound)).length;
  const headerBound = 2 * (l.headersTimeoutMs + l.checkMs);
  const bodyBound = 2 * (l.requestTimeoutMs + l.checkMs);
  if (late(r.headerClosedMs, headerBound))
    problems.push(
      `${late(r.headerClosedMs, headerBound)} header sockets not closed${timings ? ` within ${headerBound} ms` : ''}`,
    );
  if (late(r.bodyClosedMs, bodyBound))
    problems.push(
      `${late(r.bodyClosedMs, bodyBound)} body sockets not closed${timings ? ` within ${bodyBound} ms` : ''}`,
    );
  // A socket may miss its 408 (the server closes on unread input, and the kernel's reset can drop
  // it), but a run without any was not cut off by its timeouts.
  if (r.slowStatuses.length === 0 || r.slowStatuses.some((st) => st !== 408))
    problems.push(`slow sockets got ${JSON.stringify([...new Set(r.slowStatuses)])}, not 408 only`);
  return [...problems, ...pingProblems(r.probes, minProbes), ...(timings ? pingLatencyProblems(r.probes) : [])];
}
