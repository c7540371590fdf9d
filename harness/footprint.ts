/**
 * The leak detector of the soak and chaos runs (reliability-security.md §6 "no leak"): what a
 * server process and everything it started hold, sampled as the run goes, and a verdict that
 * compares the end with the middle of the run, as Triton's memory-growth test does, so that
 * warm-up (JIT, arenas, the first workers) does not count as a leak.
 */
import { descendantsOf, fdCount, orphansOf, rssBytes, zombiesOf } from './process-probes';
import { median } from './statistics';

export interface Footprint {
  /** RSS of the server and all its descendants. */
  rssBytes: number;
  /** Open file descriptors of the server process. */
  fds: number;
  /** Live descendants (workers, spares, extractors). */
  processes: number;
  zombies: number;
  /** Processes of this server (by environment marker) no longer its children. */
  orphans: number;
}

export function footprint(server: { pid: number; marker: string }): Footprint {
  const tree = descendantsOf(server.pid);
  return {
    rssBytes: [server.pid, ...tree].reduce((sum, pid) => sum + rssBytes(pid), 0),
    fds: fdCount(server.pid),
    processes: tree.length,
    zombies: zombiesOf(server.pid).length,
    orphans: orphansOf(server.pid, server.marker).length,
  };
}

export interface LeakLimits {
  /** Most RSS growth from the middle of the run to its end; null: not judged (the test suite bounds no memory). */
  rssGrowthBytes: number | null;
  /** Most file descriptors gained from the middle to the end. */
  fdSlack: number;
  /** Descendants expected once every model is unloaded (spare workers). */
  processes: number;
}

export interface LeakVerdict {
  ok: boolean;
  problems: string[];
  rssGrowthBytes: number;
  fdGrowth: number;
}

const mib = (b: number) => `${(b / 2 ** 20).toFixed(1)} MiB`;

/**
 * `samples` are taken after each cycle, all models unloaded; the middle and the end are each the
 * median of a few samples, so one noisy reading decides nothing.
 */
export function leakVerdict(samples: readonly Footprint[], limits: LeakLimits): LeakVerdict {
  if (samples.length < 4) throw new Error(`a leak verdict needs at least 4 samples, got ${samples.length}`);
  const w = Math.max(1, Math.floor(samples.length / 10));
  const mid = samples.length >> 1;
  const middle = samples.slice(mid - Math.ceil(w / 2), mid + Math.ceil(w / 2));
  const end = samples.slice(-w);
  const last = samples[samples.length - 1];
  const rssGrowthBytes = median(end.map((s) => s.rssBytes)) - median(middle.map((s) => s.rssBytes));
  const fdGrowth = median(end.map((s) => s.fds)) - median(middle.map((s) => s.fds));
  const problems: string[] = [];
  if (limits.rssGrowthBytes !== null && rssGrowthBytes > limits.rssGrowthBytes)
    problems.push(
      `RSS grew ${mib(rssGrowthBytes)} from the middle of the run to its end (limit ${mib(limits.rssGrowthBytes)})`,
    );
  if (fdGrowth > limits.fdSlack)
    problems.push(`${fdGrowth} more open file descriptors at the end than in the middle (limit ${limits.fdSlack})`);
  if (last.zombies > 0) problems.push(`${last.zombies} zombie processes`);
  if (last.orphans > 0) problems.push(`${last.orphans} orphaned processes`);
  if (last.processes !== limits.processes)
    problems.push(`${last.processes} processes left under the server, expected ${limits.processes}`);
  return { ok: problems.length === 0, problems, rssGrowthBytes, fdGrowth };
}
