/**
 * Where a model's workers come from: a one-slot host of its own (a warm spare when one is free, on
 * its GPU), or a slot in a shared host. It owns the spares, the shared hosts (started with the first
 * worker_mode=shared model), the GPU round-robin and the server's record of its processes.
 */
import type { ServerConfig, WorkerMode } from '../../config/types';
import { BodyHandoff } from '../hosts/body-handoff';
import { HostPool } from '../hosts/host-pool';
import { kModeTraits } from '../hosts/host-policy';
import type { SpawnOptions } from '../hosts/host-process';
import type { Assignment, ModelSlot } from '../hosts/model-slot';
import { cgroupParent, LimitEnforcement, type ProcessLimits } from '../processes/limit-enforcement';
import { SparePool } from './spare-pool';

/**
 * `env`: the environment workers start with, before blacklist_env_vars filters it; `launch`: what
 * starts a process (lifecycle tests start fake processes that speak frames).
 */
export interface WorkerFactoryOptions extends Omit<SpawnOptions, 'bodyHandoff' | 'limits'> {
  onSharedHostRestarted: () => void;
  onSharedHostRecycled: () => void;
}

/** Where a model of one mode starts its workers: a model asks the place of its mode. */
export interface Place {
  /** `limits`: the model's memory_limit_mb and cpu_limit, which its processes join at spawn (a limited model is never shared). */
  start(limits: ProcessLimits | null, assignment: Assignment): ModelSlot;
  /** Where a model with nowhere to start a worker waits for room (dedicated workers start anywhere). */
  waitForRoom?: (wake: () => void) => void;
  /** The GPU of each of a model's workers in turn (-1: CPU). */
  gpuFor(deviceIds: readonly number[] | null): () => number;
}

/**
 * TorchServe's GPU assignment: workers take GPUs round-robin across the whole server, or round-robin
 * over a model's own deviceIds list. -1 means CPU.
 */
export function gpuRoundRobin(numberOfGpu: number): Place['gpuFor'] {
  let next = 0;
  return (deviceIds) => {
    let k = 0;
    if (deviceIds && deviceIds.length > 0) return () => deviceIds[k++ % deviceIds.length];
    return () => (numberOfGpu <= 0 ? -1 : next++ % numberOfGpu);
  };
}

export class WorkerFactory {
  readonly #gpuFor: Place['gpuFor'];
  /** What every process starts with; bodyHandoff null = bodies go over the sockets (fake processes read no ring). */
  readonly #spawn: SpawnOptions;
  /** Every dedicated worker starts through it, with no spares when it keeps none. */
  readonly spares: SparePool;
  /** The shared hosts, started with the first worker_mode=shared model. */
  #hosts: HostPool | null = null;
  /** How a model's memory_limit_mb and cpu_limit are held: the same for every model. */
  readonly limits: LimitEnforcement;
  readonly places: Readonly<Record<WorkerMode, Place>> = {
    dedicated: {
      start: (limits, assignment) => this.spares.place(limits, assignment),
      gpuFor: (deviceIds) => this.#gpuFor(deviceIds),
    },
    shared: {
      start: (_limits, assignment) => {
        this.#hosts ??= new HostPool({
          config: this.config,
          spawn: this.#spawn,
          onRestarted: this.opts.onSharedHostRestarted,
          onRecycled: this.opts.onSharedHostRecycled,
        });
        return this.#hosts.place(assignment);
      },
      waitForRoom: (wake) => this.#hosts?.waitForRoom(wake),
      // One CUDA_VISIBLE_DEVICES per process cannot serve models on different GPUs.
      gpuFor: () => () => -1,
    },
  };

  constructor(
    private readonly config: ServerConfig,
    /** Its clock and its record of processes are the server's. */
    readonly opts: WorkerFactoryOptions,
  ) {
    this.#gpuFor = gpuRoundRobin(config.numberOfGpu);
    // Cgroups where this server can make them; none for fake processes.
    this.limits = new LimitEnforcement(opts.launch ? { reason: 'fake processes' } : cgroupParent(), opts);
    this.#spawn = {
      ...opts,
      env: Object.fromEntries(Object.entries(opts.env).filter(([k]) => !config.blacklistEnvVars?.test(k))),
      bodyHandoff: opts.launch ? null : BodyHandoff.start(config, opts.log),
    };
    // Spares speed up dedicated loads, and a shared model's promotion (autoscale): a hot model gets
    // its process in the time a load takes, not a process start. With shared the default and
    // nothing to promote, the hosts are what is kept started.
    const promotes = config.autoscale !== null && config.sharedHostHeavyShare > 0;
    const spares = kModeTraits[config.workerMode].ownProcess || promotes ? config.spareWorkers : 0;
    this.spares = new SparePool(spares, this.#spawn);
  }

  get hosts(): HostPool | null {
    return this.#hosts;
  }
}
