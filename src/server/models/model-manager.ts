/**
 * The models of this server (MMS's ModelManager): it wires together, and the front ends call
 * directly, ModelRegistry (names, list, describe, counts), LifecycleOperations (load, unload,
 * scale, eviction, shutdown), OnDemandLoader (invoke to loaded model), WorkerFactory (where workers
 * start), LifecycleEvents (cache counters, metrics hooks) and AutoscaleRounds.
 */
import type { ServerConfig } from '../../config/types';
import { ModelRepository } from '../../repository/repository';
import { realClock } from '../../util/clock';
import { ClassedPolicy } from '../cache/eviction-classes';
import { ProcessRegistry } from '../processes/process-registry';
import { WorkerFactory, type WorkerFactoryOptions } from '../workers/worker-factory';
import { AutoscaleRounds } from '../autoscale/autoscale-rounds';
import { LifecycleEvents } from './lifecycle-events';
import { LifecycleOperations } from './lifecycle-operations';
import type { ShutdownCounts } from './shutdown';
import type { Registration } from './registration';
import type { OnDemandLoader } from './on-demand';
import { ModelRegistry } from './registry';

export type { ShutdownCounts } from './shutdown';

/** Defaults: process.env, real processes, a record of this manager's own processes, the real clock. */
export type ManagerOptions = Partial<
  Pick<WorkerFactoryOptions, 'env' | 'launch' | 'readMemory' | 'processes' | 'clock'>
>;

export class ModelManager {
  readonly registry = new ModelRegistry();
  /** The cache counters (`stats`) and the metrics hooks (`sink`). */
  readonly events = new LifecycleEvents(() => this.registry.servingCount());
  readonly workers: WorkerFactory;
  readonly onDemand: OnDemandLoader;
  readonly lifecycle: LifecycleOperations;
  readonly autoscale: AutoscaleRounds<Registration> | null;
  readonly repository: ModelRepository | null;

  constructor(config: ServerConfig, cacheDir: string, log: (line: string) => void, opts: ManagerOptions = {}) {
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
    const policy = new ClassedPolicy(config.evictionPolicy);
    const repository = config.repository ? new ModelRepository(config.repository, log) : null;
    this.repository = repository;
    this.lifecycle = new LifecycleOperations({
      config,
      cacheDir,
      registry,
      workers: this.workers,
      policy,
      events,
      repository,
      log,
      clock,
    });
    this.onDemand = this.lifecycle.onDemand;
    this.autoscale = config.autoscale
      ? new AutoscaleRounds({ clock, entries: () => registry.live, ...this.lifecycle.autoscaling() })
      : null;
    this.autoscale?.start();
  }

  close(drainMs: number): Promise<ShutdownCounts> {
    this.autoscale?.stop();
    return this.lifecycle.close(drainMs);
  }
}
