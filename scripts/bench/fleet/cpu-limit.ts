/**
 * A CPU limit of its own for each fleet instance, as each pod of a real fleet has (a Kubernetes CPU
 * limit, `docker run --cpus`): a cgroup with a CFS quota that the server and every worker it forks
 * inherit. Without it the three instances of `bench:fleet` share the machine's cores, so a router that
 * sends one instance most of the load changes nobody's latency, and the bench cannot show what a
 * bound on one instance's share is for. The cgroup is made as the server makes a limited model's
 * (src/server/processes/limit-enforcement.ts: under this process's own cgroup, v2 or v1); it needs root and a
 * writable cgroup tree, and elsewhere the bench runs unlimited and says so.
 */
import path from 'node:path';
import { type Cgroup, cgroupParent } from '../../../src/server/processes/limit-enforcement';

export interface CpuLimit {
  /** A launcher for harness/cli-server's startCli: joins the cgroup, then execs the server. */
  launcher: string[];
  /** Removes the cgroup; call once its processes have exited. */
  remove(): void;
}

/** A cgroup named `name` limited to `cpus` CPUs, or the reason there is none. */
export function cpuLimit(name: string, cpus: number): CpuLimit | { reason: string } {
  const parent = cgroupParent();
  if ('reason' in parent) return parent;
  let cgroup: Cgroup;
  try {
    cgroup = parent.make(name, { memoryLimitMb: null, cpuLimit: cpus });
  } catch (err) {
    return { reason: `cannot set a CPU quota in a cgroup ${name}: ${(err as Error).message}` };
  }
  const procs = cgroup.dirs.map((d) => path.join(d, 'cgroup.procs'));
  // The shell joins each of the cgroup's directories (v1: memory and cpu; v2: one), then becomes the server.
  const joins = procs.map((_, i) => `echo $$ > "$${i}"`).join(' && ');
  return {
    launcher: ['sh', '-c', `${joins} && shift ${procs.length - 1} && exec "$@"`, ...procs],
    remove: () => {
      try {
        cgroup.remove();
      } catch {
        // Still busy (a worker not yet reaped): the kernel keeps it until that one ends.
      }
    },
  };
}
