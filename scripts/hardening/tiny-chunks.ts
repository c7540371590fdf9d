/**
 * What a chunked body of one-byte chunks costs the server (issue 33 item 1): each count in the
 * arguments (default 1 000 000 and 3 000 000) is sent as one request to a CLI server's
 * /models/tiny/invoke, and the same bytes with a Content-Length beside it for comparison, while
 * /ping is asked every 50 ms on other connections. Prints, per request,
 * the server's RSS growth (peak, and what it kept a second later), the time to the answer and the
 * connection's close, the server's CPU time meanwhile (its event loop's work: the time every other
 * caller waits on an idle machine), and the slowest /ping (on a busy machine, mostly the wait for a core).
 *
 *   node dist/scripts/hardening/tiny-chunks.js [count...] [--main path/to/dist/src/main.js]
 *
 * --main measures another build (e.g. main's, for the figures before a change).
 */
const USAGE = `Usage: node dist/scripts/hardening/tiny-chunks.js [count...] [--main path/to/dist/src/main.js]
  Sends each count (default 1000000 3000000) as one chunked body of one-byte chunks to a CLI server's
  /models/tiny/invoke, and the same bytes with a Content-Length; prints RSS, time, CPU and /ping per body.
  --main  measure another build (e.g. main's dist/src/main.js)`;
import net from 'node:net';
import { startCliServer } from '../../harness/cli-server';
import { loadModel } from '../../harness/http-requests';
import { addModel, writeModelDir } from '../../harness/onnx-models';
import { cpuMicros, rssBytes } from '../../harness/process-probes';
import { parseResponses, timedPing } from '../../harness/raw-http';
import { tempDir } from '../../harness/test-server';
import { runCli } from '../cli-flags';

const kHead = 'POST /models/tiny/invoke HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n';

/** A valid one-row request for `tiny`, padded with JSON whitespace to `bytes`. */
function payload(bytes: number): Buffer {
  const json = Buffer.from(JSON.stringify({ inputs: { x: [Array.from({ length: 16 }, (_, j) => j)] } }));
  const body = Buffer.alloc(Math.max(bytes, json.length), 0x20);
  json.copy(body);
  return body;
}

/** The request of `bytes`, framed one byte a chunk. */
export function oneByteChunks(bytes: number): Buffer {
  const body = payload(bytes);
  const head = Buffer.from(`${kHead}Transfer-Encoding: chunked\r\n\r\n`);
  const framed = Buffer.alloc(head.length + body.length * 6 + 5);
  head.copy(framed);
  let at = head.length;
  for (const b of body) {
    framed[at] = 0x31; // "1"
    framed[at + 1] = 0x0d;
    framed[at + 2] = 0x0a;
    framed[at + 3] = b;
    framed[at + 4] = 0x0d;
    framed[at + 5] = 0x0a;
    at += 6;
  }
  framed.write('0\r\n\r\n', at, 'latin1');
  return framed;
}

/** The same request with a Content-Length: what the same bytes cost framed the ordinary way. */
function withLength(bytes: number): Buffer {
  const body = payload(bytes);
  return Buffer.concat([Buffer.from(`${kHead}Content-Length: ${body.length}\r\n\r\n`), body]);
}

interface Figures {
  framing: string;
  status: number | null;
  errorCode: string;
  answerMs: number;
  closedMs: number;
  peakRssMiB: number;
  keptRssMiB: number;
  maxPingMs: number;
  cpuMs: number;
}

/** Sends the framed request while reading, as an HTTP client does: the answer, then when the server closed. */
function send(
  port: number,
  framed: Buffer,
): Promise<{ status: number | null; errorCode: string; answerMs: number; closedMs: number }> {
  const t0 = performance.now();
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let got = Buffer.alloc(0);
    let status: number | null = null;
    let errorCode = '';
    let answerMs = -1;
    socket.on('data', (d: Buffer) => {
      got = Buffer.concat([got, d]);
      const [res] = parseResponses(got, false, false).responses;
      if (res && status === null) {
        status = res.status;
        answerMs = performance.now() - t0;
        errorCode = /"errorCode": *"([A-Z_]+)"/.exec(res.body.toString())?.[1] ?? '';
        // An answer to a whole request leaves the connection open (keep-alive): done.
        if (status === 200) socket.end();
      }
    });
    socket.on('error', () => {});
    socket.on('close', () => resolve({ status, errorCode, answerMs, closedMs: performance.now() - t0 }));
    socket.write(framed);
  });
}

async function measure(port: number, pid: number, framing: string, framed: Buffer): Promise<Figures> {
  const base = rssBytes(pid);
  const cpu0 = cpuMicros(pid);
  let peak = base;
  const sampler = setInterval(() => (peak = Math.max(peak, rssBytes(pid))), 20);
  let maxPingMs = 0;
  let pinging = true;
  const pinger = (async () => {
    while (pinging) {
      const p = await timedPing(port);
      maxPingMs = Math.max(maxPingMs, p.answerMs);
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  const answer = await send(port, framed);
  const cpuMs = (cpuMicros(pid) - cpu0) / 1000;
  pinging = false;
  await pinger;
  await new Promise((r) => setTimeout(r, 1000));
  clearInterval(sampler);
  const MiB = (n: number) => Math.round(n / 2 ** 20);
  return {
    framing,
    ...answer,
    peakRssMiB: MiB(peak - base),
    keptRssMiB: MiB(rssBytes(pid) - base),
    maxPingMs,
    cpuMs,
  };
}

async function main(args: string[]): Promise<void> {
  const at = args.indexOf('--main');
  const mainPath = at >= 0 ? args.splice(at, 2)[1] : undefined;
  const counts = args.length ? args.map(Number) : [1_000_000, 3_000_000];
  const store = tempDir('mme-tiny-chunks-');
  const cli = await startCliServer('', { store, ...(mainPath ? { main: mainPath } : {}) });
  try {
    const loaded = await loadModel(cli, 'tiny', writeModelDir(store, 'tiny', addModel()));
    if (loaded.status !== 200) throw new Error(`load failed: ${loaded.status} ${loaded.text}`);
    const port = Number(new URL(cli.url).port);
    console.log(
      '| body | answer | answered after | closed after | server CPU | server RSS peak / kept | slowest /ping |',
    );
    console.log('|---|---|---|---|---|---|---|');
    const runs: Array<[string, Buffer]> = counts.flatMap(
      (n): Array<[string, Buffer]> => [
        [`${n.toLocaleString('en')} bytes, Content-Length`, withLength(n)],
        [`${n.toLocaleString('en')} one-byte chunks`, oneByteChunks(n)],
      ],
    );
    for (const [framing, framed] of runs) {
      const f = await measure(port, cli.pid, framing, framed);
      const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
      console.log(
        `| ${f.framing} | ${f.status ?? 'none'} ${f.errorCode} | ${f.answerMs < 0 ? '-' : s(f.answerMs)} | ${s(f.closedMs)} | ${Math.round(f.cpuMs)} ms | +${f.peakRssMiB} / +${f.keptRssMiB} MiB | ${Math.round(f.maxPingMs)} ms |`,
      );
    }
  } finally {
    await cli.stop();
  }
}

if (require.main === module) runCli(USAGE, main);
