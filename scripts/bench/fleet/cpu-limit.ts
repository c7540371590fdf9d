/**
 * A CPU limit of its own for each fleet instance, as each pod of a real fleet has (a Kubernetes CPU
 * limit, `docker run --cpus`): a cgroup with a CFS quota that the server and every worker it forks
 * inherit. Without it the three instances of `bench:fleet` share the machine's cores, so a router that
 * sends one instance most of the load changes nobody's latency, and the bench cannot show what a
 * bound on one instance's share is for. Needs root and a writable cgroup (v2 with the cpu controller,
 * or v1's cpu hierarchy); elsewhere the bench runs unlimited and says so.
 */
import fs from 'node:fs';
import path from 'node:path';

export interface CpuLimit {
  /** A launcher for harness/cli-server's startCli: joins the cgroup, then execs the server. */
  launcher: string[];
  /** Removes the cgroup; call once its processes have exited. */
  remove(): void;
}

const kPeriodMicros = 100_000;

/** The directory new cgroups go in, and how to set their quota; null when none can be made here. */
function hierarchy(): { root: string; quota: (dir: string, cpus: number) => void } | null {
  const v2 = '/sys/fs/cgroup';
  if (fs.existsSync(path.join(v2, 'cgroup.controllers'))) {
    if (!fs.readFileSync(path.join(v2, 'cgroup.controllers'), 'utf8').split(/\s+/).includes('cpu')) return null;
    return {
      root: v2,
      quota: (dir, cpus) => {
        fs.writeFileSync(path.join(v2, 'cgroup.subtree_control'), '+cpu');
        fs.writeFileSync(path.join(dir, 'cpu.max'), `${Math.round(cpus * kPeriodMicros)} ${kPeriodMicros}`);
      },
    };
  }
  const v1 = '/sys/fs/cgroup/cpu';
  if (!fs.existsSync(path.join(v1, 'cpu.cfs_quota_us'))) return null;
  return {
    root: v1,
    quota: (dir, cpus) => {
      fs.writeFileSync(path.join(dir, 'cpu.cfs_period_us'), String(kPeriodMicros));
      fs.writeFileSync(path.join(dir, 'cpu.cfs_quota_us'), String(Math.round(cpus * kPeriodMicros)));
    },
  };
}

/** A cgroup named `name` limited to `cpus` CPUs, or the reason there is none. */
export function cpuLimit(name: string, cpus: number): CpuLimit | { reason: string } {
  const h = hierarchy();
  if (!h) return { reason: 'no cgroup with a cpu controller here' };
  const dir = path.join(h.root, name);
  const remove = () => {
    try {
      fs.rmdirSync(dir);
    } catch {
      // Never made (not root), or still busy (a worker not yet reaped): the next run reuses the name.
    }
  };
  try {
    fs.mkdirSync(dir, { recursive: true });
    h.quota(dir, cpus);
  } catch (err) {
    remove();
    return { reason: `cannot set a CPU quota in ${dir}: ${(err as Error).message}` };
  }
  return { launcher: ['sh', '-c', 'echo $$ > "$0" && exec "$@"', path.join(dir, 'cgroup.procs')], remove };
}
