/**
 * The parts of `npm run bench:fleet` both its workloads use: MME instances on loopback in self-managed
 * cache mode, their cache counters, and a POST through the router that tells which replica answered.
 */
import http from 'node:http';
import { startBenchServer, type BenchServer } from '../kit/bench-run';

/** `npm run bench:fleet -- shared`: the instances hold their models in shared hosts, so a miss loads in milliseconds. */
export const WORKER_MODE = process.argv.includes('shared') ? 'shared' : 'dedicated';

/** One instance; `launcher` (e.g. a CPU limit's) runs before the server. */
export function startInstance(store: string, port: number, room: number, launcher?: string[]): Promise<BenchServer> {
  const address = `http://127.0.0.1:${port}`;
  return startBenchServer(
    [
      `inference_address=${address}`,
      `management_address=${address}`,
      `model_store=${store}`,
      'model_cache=on',
      `max_loaded_models=${room}`,
      `worker_mode=${WORKER_MODE}`,
    ],
    { launcher },
  );
}

export interface Counters {
  hits: number;
  invocations: number;
}

export async function counters(server: BenchServer): Promise<Counters> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const read = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? 0);
  return { hits: read('mme_model_cache_hits_total'), invocations: read('mme_invocations_total') };
}

/** Hit ratio of the requests served between two readings of the same servers. */
export function hitRatioBetween(before: Counters[], after: Counters[]): number {
  const sum = (cs: Counters[], k: keyof Counters) => cs.reduce((s, c) => s + c[k], 0);
  return (sum(after, 'hits') - sum(before, 'hits')) / (sum(after, 'invocations') - sum(before, 'invocations'));
}

/**
 * One POST over `agent`; resolves with the status, body and the replica nginx chose (X-Upstream).
 * A kept-alive connection that nginx closed as the request went out (an old worker retiring after a
 * reload) is tried again once on a new one, as Node's docs advise: nothing reached an instance.
 */
export function post(
  agent: http.Agent,
  url: string,
  headers: Record<string, string>,
  body: string,
  retried = false,
): Promise<{ status: number; text: string; replica: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      {
        agent,
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            text: Buffer.concat(chunks).toString(),
            replica: String(res.headers['x-upstream'] ?? ''),
          }),
        );
      },
    );
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (req.reusedSocket && err.code === 'ECONNRESET' && !retried)
        post(agent, url, headers, body, true).then(resolve, reject);
      else reject(err);
    });
    req.end(body);
  });
}
