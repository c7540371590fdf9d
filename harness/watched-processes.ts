/**
 * The worker processes of every server the tests started in this process (harness/test-server.ts,
 * the lifecycle harness): the suite's check of exits on unhandled rejections (root-hooks.ts) sums them.
 */
import type { ProcessRegistry } from '../src/server/processes/worker-spawn';

export const watchedProcesses = new Set<ProcessRegistry>();

export function watchProcesses(processes: ProcessRegistry): void {
  watchedProcesses.add(processes);
}
