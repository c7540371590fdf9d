/**
 * HTTP/1.1 over a bare socket, for requests no HTTP client will send (forged framing, thousands of
 * headers, a body that never ends) and for checking exactly what comes back: every response,
 * interim ones included, and whether the server closed the connection.
 */
import net from 'node:net';

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

export interface RawExchange {
  responses: RawResponse[];
  /** The server closed (or reset) the connection. */
  closed: boolean;
  /** A socket error (e.g. ECONNRESET) or a response that is not valid HTTP/1.x. */
  error: string | null;
  ms: number;
}

export interface ExchangeOptions {
  /** Resolve once this many final (non-1xx) responses are complete, without waiting for a close. */
  responses?: number;
  /** The request was HEAD: its response has no body whatever Content-Length says. */
  head?: boolean;
  /**
   * Write the request 64 KiB at a time, each once the last has gone out, and read nothing until all
   * of it is written: a client that uploads first and reads the answer afterwards.
   */
  readAfterWrite?: boolean;
  timeoutMs?: number;
}

/** Sends `request` on a new connection and collects what comes back (see ExchangeOptions for when it stops). */
export function rawExchange(port: number, request: string | Buffer, opts: ExchangeOptions = {}): Promise<RawExchange> {
  const t0 = Date.now();
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let received = Buffer.alloc(0);
    let error: string | null = null;
    let done = false;
    const finish = (closed: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      let responses: RawResponse[] = [];
      try {
        responses = parseResponses(received, closed, opts.head ?? false).responses;
      } catch (err) {
        error ??= (err as Error).message;
      }
      resolve({ responses, closed, error, ms: Date.now() - t0 });
    };
    const timer = setTimeout(() => finish(false), opts.timeoutMs ?? 10_000);
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      if (opts.responses === undefined) return;
      try {
        if (
          parseResponses(received, false, opts.head ?? false).responses.filter((r) => r.status >= 200).length >=
          opts.responses
        )
          finish(false);
      } catch {
        finish(false);
      }
    });
    socket.on('error', (err) => {
      error = (err as NodeJS.ErrnoException).code ?? err.message;
    });
    socket.on('close', () => finish(true));
    if (!opts.readAfterWrite) {
      socket.write(request);
      return;
    }
    socket.pause();
    const bytes = Buffer.from(request);
    const upload = async () => {
      for (let at = 0; at < bytes.length && !socket.destroyed; at += 65_536) {
        await new Promise((resolve) => socket.write(bytes.subarray(at, at + 65_536), resolve));
      }
      socket.resume();
    };
    void upload();
  });
}

/** The complete responses at the start of `buf`; with `closed`, a body without a length ends at the end. */
export function parseResponses(
  buf: Buffer,
  closed: boolean,
  head: boolean,
): { responses: RawResponse[]; rest: number } {
  const responses: RawResponse[] = [];
  let at = 0;
  for (;;) {
    const end = buf.indexOf('\r\n\r\n', at);
    if (end < 0) break;
    const [statusLine, ...lines] = buf.subarray(at, end).toString('latin1').split('\r\n');
    const m = /^HTTP\/1\.[01] (\d{3})(?: .*)?$/.exec(statusLine);
    if (!m) throw new Error(`not an HTTP/1.x status line: ${JSON.stringify(statusLine.slice(0, 80))}`);
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const i = line.indexOf(':');
      if (i <= 0) throw new Error(`malformed response header: ${JSON.stringify(line.slice(0, 80))}`);
      headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
    }
    const status = Number(m[1]);
    const body = bodyOf(buf, end + 4, status, headers, closed, head);
    if (body === null) break;
    responses.push({ status, headers, body: body.bytes });
    at = body.next;
  }
  return { responses, rest: at };
}

function bodyOf(
  buf: Buffer,
  start: number,
  status: number,
  headers: Record<string, string>,
  closed: boolean,
  head: boolean,
): { bytes: Buffer; next: number } | null {
  if (head || status < 200 || status === 204 || status === 304) return { bytes: Buffer.alloc(0), next: start };
  if (headers['transfer-encoding']?.toLowerCase() === 'chunked') return chunkedBody(buf, start);
  if (headers['content-length'] !== undefined) {
    const next = start + Number(headers['content-length']);
    return next <= buf.length ? { bytes: buf.subarray(start, next), next } : null;
  }
  return closed ? { bytes: buf.subarray(start), next: buf.length } : null;
}

function chunkedBody(buf: Buffer, start: number): { bytes: Buffer; next: number } | null {
  const parts: Buffer[] = [];
  let at = start;
  for (;;) {
    const eol = buf.indexOf('\r\n', at);
    if (eol < 0) return null;
    const size = parseInt(buf.subarray(at, eol).toString('latin1'), 16);
    if (!Number.isFinite(size)) throw new Error('malformed chunk size');
    if (size === 0) {
      const trailerEnd = buf.indexOf('\r\n\r\n', eol);
      return trailerEnd < 0 ? null : { bytes: Buffer.concat(parts), next: trailerEnd + 4 };
    }
    if (eol + 2 + size + 2 > buf.length) return null;
    parts.push(buf.subarray(eol + 2, eol + 2 + size));
    at = eol + 2 + size + 2;
  }
}

export interface TimedPing {
  /** Time to establish the TCP connection (SageMaker wants it within 250 ms), -1 if it never was. */
  connectMs: number;
  /** Time from connected to the response. */
  answerMs: number;
  status: number | null;
  error?: string;
}

/** GET /ping on a fresh connection, timing the connect and the answer separately. */
export function timedPing(port: number): Promise<TimedPing> {
  return new Promise((resolve) => {
    const t0 = Date.now();
    let connectMs = -1;
    let buf = Buffer.alloc(0);
    const socket = net.connect(port, '127.0.0.1');
    const done = (status: number | null, error?: string) => {
      socket.destroy();
      resolve({ connectMs, answerMs: Date.now() - t0 - Math.max(0, connectMs), status, ...(error ? { error } : {}) });
    };
    socket.setTimeout(10_000, () => done(null, 'timed out'));
    socket.on('connect', () => {
      connectMs = Date.now() - t0;
      socket.write('GET /ping HTTP/1.1\r\nHost: localhost\r\n\r\n');
    });
    socket.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      const [res] = parseResponses(buf, false, false).responses;
      if (res) done(res.status);
    });
    socket.on('error', (err: NodeJS.ErrnoException) => done(null, err.code ?? err.message));
  });
}
