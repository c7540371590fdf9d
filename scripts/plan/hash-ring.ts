/**
 * A consistent-hash ring in the manner of nginx's `hash … consistent` (ketama: 160 points per server,
 * CRC32), which ingress-nginx's upstream-hash-by and Envoy's ring hash also follow in spirit. The
 * planner uses it to predict how a fleet splits the models; the live fleet is routed by nginx itself.
 * When a server leaves, only the keys it held move, each to the server after it on the ring.
 */
import { crc32 } from 'node:zlib';

const POINTS_PER_SERVER = 160;

export class HashRing {
  /** Points ascending by hash; each names the server that owns the arc up to it. */
  private readonly points: { hash: number; server: string }[];

  constructor(readonly servers: readonly string[]) {
    if (servers.length === 0) throw new Error('a hash ring needs at least one server');
    this.points = servers
      .flatMap((server) =>
        Array.from({ length: POINTS_PER_SERVER }, (_, i) => ({ hash: crc32(`${server}-${i}`), server })),
      )
      .sort((a, b) => a.hash - b.hash || (a.server < b.server ? -1 : 1));
  }

  /** The server a key goes to: the first point at or after the key's hash, wrapping around. */
  serverOf(key: string): string {
    const h = crc32(key);
    let lo = 0;
    let hi = this.points.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.points[mid].hash < h) lo = mid + 1;
      else hi = mid;
    }
    return this.points[lo === this.points.length ? 0 : lo].server;
  }
}
