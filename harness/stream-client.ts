/**
 * A client that records when each piece of a streamed (chunked) response arrives: what the
 * streaming tests check, and how a benchmark measures time to first chunk:
 *
 *   const { firstChunkMs, totalMs } = await streamInvoke(`${url}/models/text-generator/invoke`, body);
 */
import http from 'node:http';
import { performance } from 'node:perf_hooks';

export interface StreamedResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** Body pieces in arrival order (one per socket read, so close writes may merge). */
  chunks: Buffer[];
  /** Milliseconds from sending the request to the arrival of each chunk. */
  arrivals: number[];
  firstChunkMs: number;
  totalMs: number;
  /** The response ended with its terminating chunk (false: cut short by the server, or by stopAfter). */
  complete: boolean;
}

export interface StreamOptions {
  headers?: Record<string, string>;
  /** Disconnect after this many chunks, as a client that gives up mid-stream does. */
  stopAfter?: number;
}

export function streamInvoke(url: string, body: string | Buffer, opts: StreamOptions = {}): Promise<StreamedResponse> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const req = http.request(
      url,
      { method: 'POST', headers: { 'content-type': 'application/json', ...opts.headers } },
      (res) => {
        const out: StreamedResponse = {
          status: res.statusCode!,
          headers: res.headers,
          chunks: [],
          arrivals: [],
          firstChunkMs: NaN,
          totalMs: NaN,
          complete: false,
        };
        let done = false;
        const finish = () => {
          if (done) return;
          done = true;
          out.totalMs = performance.now() - t0;
          out.firstChunkMs = out.arrivals[0] ?? out.totalMs;
          resolve(out);
        };
        res.on('data', (chunk: Buffer) => {
          out.chunks.push(chunk);
          out.arrivals.push(performance.now() - t0);
          if (out.chunks.length === opts.stopAfter) {
            req.destroy();
            finish();
          }
        });
        res.on('end', () => {
          out.complete = true;
          finish();
        });
        // A body cut short (the socket closed before the last chunk) ends here, not in 'end'.
        res.on('error', finish);
        res.on('aborted', finish);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}
