/**
 * The models of this server (MMS's ModelManager): it wires together, and the front ends call
 * directly, ModelRegistry (names, list, describe, counts), LifecycleOperations (load, unload,
 * scale, eviction, shutdown), OnDemandLoader (invoke to loaded model), WorkerFactory (where workers
 * start), its events (cache counters, metrics hooks) and AutoscaleRounds.
 */
import type { ServerConfig } from '../../config/types';
import { ModelRepository } from '../../repository/repository';
import { realClock } from '../../util/clock';
import { within } from '../../util/within';
import { ClassedPolicy } from '../cache/eviction-classes';
import { ProcessRegistry } from '../processes/worker-spawn';
import { WorkerFactory, type WorkerFactoryOptions } from '../workers/worker-factory';
import { AutoscaleRounds } from '../autoscale/autoscale-rounds';
import type { LifecycleEvents } from './lifecycle-events';
import { LifecycleOperations } from './lifecycle-operations';
import type { Registration } from './registration';
import type { OnDemandLoader } from './on-demand';
import { ModelRegistry } from './registry';

/** What a shutdown did to the requests it found admitted: finished in the drain, or cut off. */
export type ShutdownCounts = { drained: number; cutOff: number };

/** After the drain, how long killed processes get to be reaped. */
const kReapBoundMs = 5000;

/** Defaults: process.env, real processes, a record of this manager's own processes, the real clock. */
export type ManagerOptions = Partial<
  Pick<WorkerFactoryOptions, 'env' | 'launch' | 'readMemory' | 'processes' | 'clock'>
>;

export class ModelManager {
  readonly registry = new ModelRegistry();
  readonly events: LifecycleEvents = {
    stats: { hits: 0, misses: 0, loads: 0, loadFailures: 0, evictions: 0 },
    sink: {},
  };
  readonly workers: WorkerFactory;
  readonly onDemand: OnDemandLoader;
  readonly lifecycle: LifecycleOperations;
  readonly autoscale: AutoscaleRounds<Registration> | null;
  readonly repository: ModelRepository | null;

  constructor(
    config: ServerConfig,
    cacheDir: string,
    private readonly log: (line: string) => void,
    opts: ManagerOptions = {},
  ) {
    const { registry, events } = this;
    const clock = opts.clock ?? realClock;
    this.workers = new WorkerFactory(config, {
      env: opts.env ?? process.env,
      log,
      clock,
      launch: opts.launch,
      readMemory: opts.readMemory,
      processes: opts.processes ?? new ProcessRegistry(),
      onSharedHostRestarted: () => events.sink.sharedHostRestarted?.(),
      onSharedHostRecycled: () => events.sink.sharedHostRecycled?.(),
    });
    this.repository = config.repository ? new ModelRepository(config.repository, log) : null;
    this.lifecycle = new LifecycleOperations({
      config,
      cacheDir,
      registry,
      workers: this.workers,
      policy: new ClassedPolicy(config.evictionPolicy),
      events,
      repository: this.repository,
      log,
      clock,
    });
    this.onDemand = this.lifecycle.onDemand;
    this.autoscale = config.autoscale
      ? new AutoscaleRounds({ clock, entries: () => registry.live, ...this.lifecycle.autoscaling() })
      : null;
    this.autoscale?.start();
  }

  /**
   * The server's shutdown, bounded: loads in progress are stopped at once; serving models drain for
   * up to `drainMs`, then their workers are killed. Whatever still runs after that is SIGKILLed, so
   * it resolves within drainMs plus the time to reap the processes.
   */
  async close(drainMs: number): Promise<ShutdownCounts> {
    this.autoscale?.stop();
    const { lifecycle, workers } = this;
    const { clock } = workers.opts;
    lifecycle.closing = true;
    const counts: ShutdownCounts = { drained: 0, cutOff: 0 };
    const deadline = clock.now() + drainMs;
    const stopping = Promise.all([...this.registry.live].map((e) => lifecycle.shutdown(e, deadline, counts)));
    const spares = workers.spares.close();
    if ((await within(stopping, drainMs + kReapBoundMs, 'late' as const, clock)) === 'late') {
      this.log(
        `shutdown: models still stopping after ${Math.round((drainMs + kReapBoundMs) / 1000)} s; killing every worker process`,
      );
      const { live } = workers.opts.processes;
      for (const h of live) h.kill('stopped');
      await within(Promise.all([...live].map((h) => h.exited)), kReapBoundMs, null, clock);
    }
    await spares;
    await workers.hosts?.close();
    this.repository?.close();
    return counts;
  }
}
