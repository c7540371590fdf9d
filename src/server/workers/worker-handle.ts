/**
 * The parent's handle on one worker process. Lifecycle (every transition goes through #setState):
 *
 *   starting ──Started + assign()──▶ loading ──Loaded──▶ ready ──stop()──▶ stopping ──exit──▶ stopped
 *       └──────────────── exit / LoadFailed / load timeout ─────────────▶ failed
 *
 * start() spawns the process; assign() gives it a model. A spare worker (SparePool) is started
 * before its model is known, so a load skips process start-up.
 *
 * A worker runs up to `capacity` batches at once (1, or a preload_model process's slot count);
 * the model's dispatcher decides what it runs.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { MmeError } from '../../errors';
import {
  FrameReader, MessageKind, encodeFrame, type Frame, type InferMessage, type LoadMessage, type LoadedMessage,
  type ResultMessage, type ChunkMessage,
} from '../../protocol/frames';

export type WorkerState = 'starting' | 'loading' | 'ready' | 'stopping' | 'stopped' | 'failed';

export interface SpawnOptions {
  env: NodeJS.ProcessEnv;
  /** GPU made visible to the process as CUDA_VISIBLE_DEVICES, or -1. */
  gpuId: number;
  log: (line: string) => void;
}

export interface Assignment {
  id: string;
  load: LoadMessage;
  loadTimeoutMs: number;
  maxFrameBytes: number;
}

/** Frame limit until a model (and its max_response_size) is assigned: Started/LoadFailed are tiny. */
const kUnassignedFrameLimit = 1 << 20;

export interface WorkerExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /**
   * The 507 signature: SIGKILL (what the kernel's OOM killer sends; `kill -9` looks the same), or
   * V8 aborting because the JavaScript heap is exhausted.
   */
  outOfMemory: boolean;
}

const kWorkerScript = path.join(__dirname, '..', '..', 'worker-process', 'main.js');
// PR_SET_PDEATHSIG through util-linux: the kernel kills the worker when the server dies, even by
// SIGKILL, even while the worker is stuck inside a native call that no JS timer could interrupt.
const kSetpriv = ['/usr/bin/setpriv', '/bin/setpriv'].find((p) => fs.existsSync(p)) ?? null;
// Make the kernel's OOM killer choose a worker, never the server holding every other model.
const kWorkerOomScoreAdj = '900';
/** What V8 prints before it aborts on an exhausted heap (SIGABRT is otherwise any native crash). */
const kHeapExhausted = /JavaScript heap out of memory/;
/** How long an aborted worker's last stderr lines may take to arrive after its exit. */
const kAbortReasonWaitMs = 500;

export class WorkerHandle extends EventEmitter {
  /** Processes started by this server process (a 507 admission must start none). */
  static spawned = 0;
  id: string;
  readonly gpuId: number;
  state: WorkerState = 'starting';
  pid = 0;
  readonly startTime = new Date();
  loaded: LoadedMessage | null = null;
  /** Why the load failed (what `ready` rejected with), once it has. */
  loadError: MmeError | null = null;
  /** Time from spawn to the worker's first message (process + runtime start), µs. */
  spawnMicros = 0;
  /** Batches sent and not yet answered, by batch id. */
  readonly inFlight = new Map<number, InferMessage>();
  /** Batches this process may run at once: 1, or the slot count of a preload_model process. */
  capacity = 1;
  /** PSS of the process after load, refreshed on describe (bytes). */
  memoryBytes = 0;
  exitInfo: WorkerExit | null = null;

  readonly #opts: SpawnOptions;
  #assignment: Assignment | null = null;
  #reader: FrameReader | null = null;
  /** Started arrived: the process is up and its runtime warm. */
  hasStarted = false;
  #child: ChildProcess | null = null;
  #channel: Socket | null = null;
  #loadTimer: NodeJS.Timeout | null = null;
  readonly #t0 = performance.now();
  #assignedAt = 0;
  readonly #exited: Promise<WorkerExit>;
  #resolveExit!: (e: WorkerExit) => void;
  #loadSettled = false;
  #killSent = false;
  #heapExhausted = false;
  #resolveLoad!: (m: LoadedMessage) => void;
  #rejectLoad!: (e: MmeError) => void;
  readonly ready: Promise<LoadedMessage>;

  constructor(opts: SpawnOptions, id = `spare-${WorkerHandle.spawned + 1}`) {
    super();
    this.#opts = opts;
    this.id = id;
    this.gpuId = opts.gpuId;
    this.#exited = new Promise((r) => (this.#resolveExit = r));
    this.ready = new Promise((resolve, reject) => {
      this.#resolveLoad = resolve;
      this.#rejectLoad = reject;
    });
    this.ready.catch(() => undefined);
  }

  /** Spawns the process; it reports Started once its runtime is warm. */
  start(): this {
    const node = [process.execPath, kWorkerScript];
    const [cmd, ...args] = kSetpriv ? [kSetpriv, '--pdeathsig', 'KILL', ...node] : node;
    const env = { ...this.#opts.env };
    if (this.gpuId >= 0) env.CUDA_VISIBLE_DEVICES = String(this.gpuId);
    WorkerHandle.spawned++;
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe', 'pipe'], env });
    this.#child = child;
    this.pid = child.pid ?? 0;
    if (this.pid) fs.writeFile(`/proc/${this.pid}/oom_score_adj`, kWorkerOomScoreAdj, () => undefined);
    for (const stream of [child.stdout!, child.stderr!]) {
      readline.createInterface({ input: stream, crlfDelay: Infinity }).on('line', (line) => {
        if (kHeapExhausted.test(line)) this.#heapExhausted = true;
        this.#opts.log(`[${this.id}] ${line}`);
      });
    }
    const channel = child.stdio[3] as Socket;
    this.#channel = channel;
    const reader = new FrameReader(kUnassignedFrameLimit, (f) => this.#onFrame(f));
    this.#reader = reader;
    channel.on('data', (chunk: Buffer) => {
      try {
        reader.push(chunk);
      } catch (err) {
        this.#opts.log(`[${this.id}] protocol error: ${(err as Error).message}; killing the worker`);
        this.kill();
      }
    });
    channel.on('error', () => undefined);
    child.on('error', (err) => this.#opts.log(`[${this.id}] spawn failed: ${err.message}`));
    child.on('exit', (code, signal) => {
      // 'exit' can come before the last stderr lines: an abort waits (briefly) for V8's reason.
      if ((signal !== 'SIGABRT' && code !== 134) || child.stderr!.readableEnded) return this.#onExit(code, signal);
      let settled = false;
      const settle = () => {
        if (settled) return;
        settled = true;
        clearTimeout(bound);
        this.#onExit(code, signal);
      };
      const bound = setTimeout(settle, kAbortReasonWaitMs);
      child.stderr!.once('end', settle);
    });
    return this;
  }

  /** Gives the worker its model; `ready` settles when it is loaded or failed. */
  assign(assignment: Assignment): this {
    this.#assignment = assignment;
    this.#assignedAt = performance.now();
    this.id = assignment.id;
    this.#reader!.maxFrameBytes = assignment.maxFrameBytes;
    this.#loadTimer = setTimeout(() => this.#failLoad(new MmeError('MME_ERR_LOAD_TIMEOUT', `worker ${this.id} did not finish loading within ${assignment.loadTimeoutMs / 1000} s (model_load_timeout); it was stopped`)), assignment.loadTimeoutMs);
    if (this.hasStarted) this.#sendLoad();
    return this;
  }

  #sendLoad(): void {
    this.#setState('loading');
    this.#send({ kind: MessageKind.Load, msg: this.#assignment!.load });
  }

  get isIdle(): boolean {
    return this.state === 'ready' && !this.#killSent && this.inFlight.size < this.capacity;
  }

  /** Nothing sent and unanswered: what job tickets need (a free pipeline slot is not enough). */
  get isVacant(): boolean {
    return this.isIdle && this.inFlight.size === 0;
  }

  run(batch: InferMessage): void {
    this.inFlight.set(batch.batchId, batch);
    this.#send({ kind: MessageKind.Infer, msg: batch });
  }

  cancel(id: number): void {
    this.#send({ kind: MessageKind.Cancel, msg: { id } });
  }

  /** SIGKILL, not a polite request: onnxruntime-node leaks on session release, so memory only comes back with the process. */
  kill(): void {
    // Between the signal and the exit event the worker must not be handed new work.
    this.#killSent = true;
    if (this.#child && this.exitInfo === null) this.#child.kill('SIGKILL');
  }

  /** Takes the worker out of dispatch; it finishes what it runs, then stop() ends it. */
  retire(): void {
    this.#setState('stopping');
  }

  /** Stops the process and resolves once it has exited and its memory is released. */
  async stop(): Promise<WorkerExit> {
    if (this.state !== 'stopped' && this.state !== 'failed') this.#setState('stopping');
    this.kill();
    return this.#exited;
  }

  get exited(): Promise<WorkerExit> {
    return this.#exited;
  }

  #send(frame: Frame): void {
    const channel = this.#channel;
    if (!channel) return;
    // Frames written in one tick leave in one syscall (a burst of dispatches, or a batch and its load).
    if (channel.writableCorked === 0) {
      channel.cork();
      process.nextTick(() => channel.uncork());
    }
    channel.write(encodeFrame(frame));
  }

  #setState(state: WorkerState): void {
    if (this.state === state) return;
    const from = this.state;
    this.state = state;
    this.emit('state', state, from);
  }

  #onFrame(frame: Frame): void {
    switch (frame.kind) {
      case MessageKind.Started:
        this.hasStarted = true;
        this.emit('started');
        if (this.#assignment) {
          // Process start-up this load waited for: all of it for a fresh worker, the rest of it for a spare.
          this.spawnMicros = Math.round((performance.now() - Math.max(this.#t0, this.#assignedAt)) * 1000);
          this.#sendLoad();
        }
        break;
      case MessageKind.Loaded:
        if (this.#loadSettled) return;
        this.#loadSettled = true;
        clearTimeout(this.#loadTimer!);
        this.loaded = frame.msg;
        this.#setState('ready');
        this.#resolveLoad(frame.msg);
        break;
      case MessageKind.LoadFailed:
        this.#failLoad(MmeError.fromWire(frame.msg.error));
        break;
      case MessageKind.Result: {
        const batch = this.inFlight.get(frame.msg.batchId);
        this.inFlight.delete(frame.msg.batchId);
        if (batch) this.emit('result', frame.msg as ResultMessage, batch);
        break;
      }
      case MessageKind.Chunk:
        this.emit('chunk', frame.msg as ChunkMessage);
        break;
      default:
        break;
    }
  }

  #failLoad(err: MmeError): void {
    if (this.#loadSettled) return;
    this.#loadSettled = true;
    this.loadError = err;
    clearTimeout(this.#loadTimer!);
    this.#setState('failed');
    this.kill();
    this.#rejectLoad(err);
  }

  #onExit(code: number | null, signal: NodeJS.Signals | null): void {
    clearTimeout(this.#loadTimer!);
    const outOfMemory = signal === 'SIGKILL' || code === 137 || this.#heapExhausted;
    // Read before #failLoad marks the worker failed: a worker we stopped mid-load exited as expected.
    const expected = this.state === 'stopping';
    this.exitInfo = { code, signal, outOfMemory };
    if (!this.#loadSettled) {
      const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
      this.#failLoad(outOfMemory && this.state !== 'stopping'
        ? new MmeError('MME_ERR_INSUFFICIENT_MEMORY', `worker ${this.id} ${how} while loading the model (out of memory: the kernel's OOM killer, or an exhausted JavaScript heap)`)
        : new MmeError('MME_ERR_LOAD_FAILED', `worker ${this.id} ${how} while loading the model; see the server log for its output`));
    }
    this.#setState(expected ? 'stopped' : 'failed');
    this.#channel?.destroy();
    this.#resolveExit(this.exitInfo);
    this.emit('exit', this.exitInfo, expected);
  }
}
