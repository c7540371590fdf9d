/**
 * The registry of models (MMS's ModelManager): load, unload, scale, list, describe and the route
 * from an invoke to the model. A name is claimed synchronously before any work starts, so of 20
 * concurrent loads of one name exactly one proceeds and 19 get 409.
 */
import path from 'node:path';
import { resolveArtifact, type ModelArtifact } from '../artifacts/model-artifact';
import type { ServerConfig } from '../config/types';
import { MmeError } from '../errors';
import type { WireRequest } from '../protocol/frames';
import { GpuAssigner } from '../workers/gpu-assignment';
import type { InvokeResult, JobOptions } from './job';
import { Model, type ModelSettings } from './model';

export interface LoadRequest {
  modelName: string;
  url: string;
  handler?: string;
  batchSize?: number;
  maxBatchDelayMs?: number;
  initialWorkers?: number;
  responseTimeoutSeconds?: number;
  loadTimeoutSeconds?: number;
  jobQueueSize?: number;
  useJobTicket?: boolean;
  preloadModel?: boolean;
  deviceIds?: number[];
  synchronous?: boolean;
  loadedAtStartup?: boolean;
}

interface Entry {
  url: string;
  model: Model | null;
  artifact: ModelArtifact | null;
  /** Settles when the load finishes either way. */
  loading: Promise<void>;
  loadedAtStartup: boolean;
}

/** Model names become file and log names: keep them to a safe, SageMaker-compatible alphabet. */
const kModelName = /^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$/;

export function checkModelName(name: unknown): string {
  if (typeof name !== 'string' || name.length === 0) throw new MmeError('MME_ERR_BAD_REQUEST', 'Parameter model_name is required.');
  if (!kModelName.test(name)) {
    throw new MmeError('MME_ERR_BAD_REQUEST', `model_name ${JSON.stringify(name.slice(0, 64))} is not valid: use 1-255 letters, digits, '.', '_' or '-', starting with a letter or digit`);
  }
  return name;
}

export class ModelManager {
  readonly #entries = new Map<string, Entry>();
  readonly #gpus: GpuAssigner;
  readonly #workerEnv: NodeJS.ProcessEnv;

  constructor(private readonly config: ServerConfig, private readonly cacheDir: string, private readonly log: (line: string) => void, env: NodeJS.ProcessEnv = process.env) {
    this.#gpus = new GpuAssigner(config.numberOfGpu);
    this.#workerEnv = Object.fromEntries(Object.entries(env).filter(([k]) => !config.blacklistEnvVars?.test(k)));
  }

  /** Resolves when every worker has loaded (or at once with synchronous=false); throws MmeError. */
  async load(req: LoadRequest): Promise<'loaded' | 'accepted'> {
    const name = checkModelName(req.modelName);
    if (typeof req.url !== 'string' || req.url.length === 0) throw new MmeError('MME_ERR_BAD_REQUEST', 'Parameter url is required.');
    if (this.#entries.has(name)) throw new MmeError('MME_ERR_MODEL_CONFLICT', `Model ${name} is already registered.`);
    let settle!: () => void;
    const entry: Entry = { url: req.url, model: null, artifact: null, loading: new Promise((r) => (settle = r)), loadedAtStartup: req.loadedAtStartup ?? false };
    this.#entries.set(name, entry);
    const work = this.#load(name, req, entry).finally(settle);
    if (req.synchronous === false) {
      work.catch((err: MmeError) => this.log(`[${name}] asynchronous load failed: ${err.message}`));
      return 'accepted';
    }
    await work;
    return 'loaded';
  }

  async #load(name: string, req: LoadRequest, entry: Entry): Promise<void> {
    try {
      entry.artifact = await resolveArtifact(req.url, { cacheDir: this.cacheDir });
      const settings = this.#settings(req, entry.artifact);
      const handlerPath = req.handler ?? entry.artifact.handlerPath ?? this.config.defaultServiceHandler;
      const model = new Model(name, req.url, settings, {
        load: {
          modelName: name,
          modelDir: entry.artifact.dir,
          onnxPath: entry.artifact.onnxPath,
          handlerPath: handlerPath ? path.resolve(entry.artifact.dir, handlerPath) : null,
          intraOpThreads: this.config.intraOpThreads,
          interOpThreads: this.config.interOpThreads,
          decodeInputRequest: this.config.decodeInputRequest,
        },
        env: this.#workerEnv,
        maxResponseSize: this.config.maxResponseSize,
        assignGpu: () => this.#gpus.assign(name, settings.deviceIds),
        log: this.log,
      });
      entry.model = model;
      await model.start();
      this.log(`[${name}] loaded from ${req.url} with ${model.workers.length} worker(s)`);
    } catch (err) {
      // A failed load leaves nothing behind: no entry, no process, no extracted files.
      this.#entries.delete(name);
      this.#gpus.forget(name);
      await entry.model?.stop(0);
      await entry.artifact?.dispose();
      throw err;
    }
  }

  #settings(req: LoadRequest, artifact: ModelArtifact): ModelSettings {
    const mc = artifact.modelConfig;
    const c = this.config;
    const workers = req.initialWorkers ?? mc.minWorkers ?? c.workersPerModel;
    return {
      minWorkers: workers,
      maxWorkers: Math.max(workers, mc.maxWorkers ?? workers),
      batchSize: req.batchSize ?? mc.batchSize ?? c.defaultBatchSize,
      maxBatchDelayMs: req.maxBatchDelayMs ?? mc.maxBatchDelay ?? c.defaultMaxBatchDelayMs,
      jobQueueSize: req.jobQueueSize ?? mc.jobQueueSize ?? c.jobQueueSize,
      responseTimeoutMs: (req.responseTimeoutSeconds ?? mc.responseTimeout ?? c.responseTimeoutSeconds) * 1000,
      loadTimeoutMs: (req.loadTimeoutSeconds ?? mc.loadTimeout ?? c.modelLoadTimeoutSeconds) * 1000,
      useJobTicket: req.useJobTicket ?? mc.useJobTicket ?? false,
      preloadModel: req.preloadModel ?? mc.preloadModel ?? c.preloadModel,
      deviceIds: req.deviceIds ?? mc.deviceIds ?? null,
    };
  }

  /** The model if fully loaded; 404 otherwise (a model still loading is not "loaded" to SageMaker). */
  get(name: string): Model {
    const model = this.#entries.get(name)?.model;
    if (!model || (model.state !== 'ready' && model.state !== 'failed')) throw new MmeError('MME_ERR_MODEL_NOT_FOUND', `Model not found: ${name}`);
    return model;
  }

  invoke(name: string, request: WireRequest, opts?: JobOptions): Promise<InvokeResult> {
    return this.get(name).submit(request, opts);
  }

  /** Unload waits for a load in progress, then releases everything; resolves after every process exited. */
  async unload(name: string): Promise<void> {
    const entry = this.#entries.get(name);
    if (!entry) throw new MmeError('MME_ERR_MODEL_NOT_FOUND', `Model not found: ${name}`);
    await entry.loading;
    if (this.#entries.get(name) !== entry || !entry.model || entry.model.state === 'unloading' || entry.model.state === 'unloaded') {
      throw new MmeError('MME_ERR_MODEL_NOT_FOUND', `Model not found: ${name}`);
    }
    const model = entry.model;
    const drained = model.drain(this.config.unregisterModelTimeoutSeconds * 1000);
    model.state = 'unloading';
    if (!(await drained)) this.log(`[${name}] unload: requests still running after ${this.config.unregisterModelTimeoutSeconds} s (unregister_model_timeout); stopping anyway`);
    await model.stop(0);
    this.#entries.delete(name);
    this.#gpus.forget(name);
    await entry.artifact?.dispose();
    this.log(`[${name}] unloaded`);
  }

  async scale(name: string, min: number, max: number, synchronous: boolean): Promise<void> {
    await this.get(name).scale(min, max, synchronous);
  }

  /** Fully loaded models, sorted by name. */
  list(): Array<{ name: string; url: string; model: Model; loadedAtStartup: boolean }> {
    const out: Array<{ name: string; url: string; model: Model; loadedAtStartup: boolean }> = [];
    for (const [name, e] of this.#entries) {
      if (e.model && (e.model.state === 'ready' || e.model.state === 'failed')) out.push({ name, url: e.url, model: e.model, loadedAtStartup: e.loadedAtStartup });
    }
    return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  entry(name: string): { url: string; loadedAtStartup: boolean } | undefined {
    return this.#entries.get(name);
  }

  /** Stops every model; used on shutdown. */
  async close(drainMs: number): Promise<void> {
    const entries = [...this.#entries.entries()];
    await Promise.all(entries.map(async ([name, e]) => {
      await e.loading;
      if (e.model) {
        await e.model.drain(drainMs);
        await e.model.stop(0);
      }
      await e.artifact?.dispose();
      this.#entries.delete(name);
    }));
  }
}
