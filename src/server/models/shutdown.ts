/**
 * The server's shutdown, bounded: loads in progress are stopped at once; serving models drain for
 * up to `drainMs`, then their workers are killed. Whatever still runs after that is SIGKILLed, so
 * it resolves within drainMs plus the time to reap the processes.
 */
import type { Clock } from '../../util/clock';
import { within } from '../../util/within';
import type { WorkerFactory } from '../workers/worker-factory';
import type { ModelRepository } from '../../repository/repository';
import { shuttingDown } from './model-names';
import type { Registration } from './registration';
import type { ModelRegistry } from './registry';

/** What a shutdown did to the requests it found admitted: finished in the drain, or cut off. */
export interface ShutdownCounts {
  drained: number;
  cutOff: number;
}

/** After the drain, how long killed processes get to be reaped. */
const kReapBoundMs = 5000;

export async function closeAll(
  drainMs: number,
  deps: {
    registry: ModelRegistry;
    workers: WorkerFactory;
    repository: ModelRepository | null;
    log: (line: string) => void;
    clock: Clock;
  },
  /** Drains and stops one registration (under its lock) by `deadline`, counting its requests. */
  shutdown: (entry: Registration, deadline: number, counts: ShutdownCounts) => Promise<void>,
): Promise<ShutdownCounts> {
  const { workers, clock } = deps;
  const counts: ShutdownCounts = { drained: 0, cutOff: 0 };
  const deadline = clock.now() + drainMs;
  const live = deps.registry.live;
  for (const e of live) if (e.phase === 'loading') e.abortLoad.abort(shuttingDown());
  const spares = workers.spares.close();
  const stopping = Promise.all([...live].map((e) => shutdown(e, deadline, counts)));
  if ((await within(stopping, drainMs + kReapBoundMs, 'late' as const, clock)) === 'late') {
    deps.log(
      `shutdown: models still stopping after ${Math.round((drainMs + kReapBoundMs) / 1000)} s; killing every worker process`,
    );
    const { live } = workers.opts.processes;
    for (const h of live) h.kill('stopped');
    await within(Promise.all([...live].map((h) => h.exited)), kReapBoundMs, null, clock);
  }
  await spares;
  await workers.hosts?.close();
  deps.repository?.close();
  return counts;
}
