/**
 * The server's handle on one worker process. Lifecycle (every transition goes through #setState):
 *
 *   starting ──Started + assign()──▶ loading ──Loaded──▶ ready ──retire()/stop()──▶ stopping ──exit──▶ stopped
 *       └──────────────── exit / LoadFailed / load timeout ───────────────────────────────▶ failed
 *
 * start() spawns the process; assign() gives it a model. A spare worker (SparePool) is started
 * before its model is known, so a load skips process start-up.
 *
 * The handle owns the batches it was given until each is answered or the process ends; at exit it
 * hands them back, split into the one(s) running and the ones still waiting in its pipe, with the
 * exit's reason (src/server/workers/exit-reason.ts). Nobody else edits its bookkeeping.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { MmeError } from '../../errors';
import { within } from '../../within';
import { FrameReader, MessageKind, writeFrame, type Frame, type InferMessage, type LoadedMessage } from '../../protocol/frames';
import type { Job } from '../models/job';
import { exitReason, loadExitError, type KillReason, type WorkerExit } from './exit-reason';
import { processMemoryBytes } from './process-memory';
import type { Assignment, InFlightBatch, ModelWorker, WorkerListener, WorkerState } from './model-worker';

export interface SpawnOptions {
  env: NodeJS.ProcessEnv;
  /** GPU made visible to the process as CUDA_VISIBLE_DEVICES, or -1. */
  gpuId: number;
  log: (line: string) => void;
}

/** Frame limit until a model (and its max_response_size) is assigned: Started/LoadFailed are tiny. */
const kUnassignedFrameLimit = 1 << 20;

const kWorkerScript = path.join(__dirname, '..', '..', 'worker-process', 'main.js');
/** `node --cpu-prof[-dir=…] dist/src/main.js` profiles the workers too: both sides of every request. */
const kProfilerArgs = process.execArgv.filter((a) => /^--(cpu|heap)-prof/.test(a));
const kProfileExitMs = 5000;
// PR_SET_PDEATHSIG through util-linux: the kernel kills the worker when the server dies, even by
// SIGKILL, even while the worker is stuck inside a native call that no JS timer could interrupt.
const kSetpriv = ['/usr/bin/setpriv', '/bin/setpriv'].find((p) => fs.existsSync(p)) ?? null;
// Make the kernel's OOM killer choose a worker, never the server holding every other model.
const kWorkerOomScoreAdj = '900';
/** What V8 prints before it aborts on an exhausted heap (SIGABRT is otherwise any native crash). */
const kHeapExhausted = /JavaScript heap out of memory/;
/** How long an aborted worker's last stderr lines may take to arrive after its exit. */
const kAbortReasonWaitMs = 500;

export class WorkerHandle extends EventEmitter implements ModelWorker {
  /** Processes started by this server process (a 507 admission must start none). */
  static spawned = 0;
  /** Every process not yet exited: a bounded shutdown kills what is left. */
  static readonly live = new Set<WorkerHandle>();
  id: string;
  readonly gpuId: number;
  state: WorkerState = 'starting';
  pid = 0;
  readonly startTime = new Date();
  loaded: LoadedMessage | null = null;
  loadError: MmeError | null = null;
  spawnMicros = 0;
  capacity = 1;
  memoryBytes = 0;
  exitInfo: WorkerExit | null = null;
  /** Started arrived: the process is up and its runtime warm. */
  hasStarted = false;

  readonly #opts: SpawnOptions;
  readonly #inFlight = new Map<number, InFlightBatch>();
  /** Answers still to come for a partly answered batch. */
  readonly #unanswered = new Map<InFlightBatch, number>();
  #listener: WorkerListener | null = null;
  #assignment: Assignment | null = null;
  #reader: FrameReader | null = null;
  #child: ChildProcess | null = null;
  #channel: Socket | null = null;
  #loadTimer: NodeJS.Timeout | null = null;
  readonly #t0 = performance.now();
  #assignedAt = 0;
  readonly #exited: Promise<WorkerExit>;
  #resolveExit!: (e: WorkerExit) => void;
  #loadSettled = false;
  #killedBy: KillReason | null = null;
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
    const node = [process.execPath, ...kProfilerArgs, kWorkerScript];
    const [cmd, ...args] = kSetpriv ? [kSetpriv, '--pdeathsig', 'KILL', ...node] : node;
    const env = { ...this.#opts.env };
    if (this.gpuId >= 0) env.CUDA_VISIBLE_DEVICES = String(this.gpuId);
    WorkerHandle.spawned++;
    WorkerHandle.live.add(this);
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
    const onData = (chunk: Buffer) => {
      try {
        reader.push(chunk);
      } catch (err) {
        // The reader is out of step with the stream now: read nothing more from this process.
        channel.off('data', onData);
        channel.pause();
        this.#opts.log(`[${this.id}] protocol error: ${(err as Error).message}; stopping the worker`);
        this.kill('protocol-error');
      }
    };
    channel.on('data', onData);
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
    this.#loadTimer = setTimeout(() => {
      this.#failLoad(new MmeError('MME_ERR_LOAD_TIMEOUT', `worker ${this.id} did not finish loading within ${assignment.loadTimeoutMs / 1000} s (model_load_timeout); it was stopped`), 'timeout-kill');
    }, assignment.loadTimeoutMs);
    if (this.hasStarted) this.#sendLoad();
    return this;
  }

  listen(listener: WorkerListener): void {
    this.#listener = listener;
  }

  #sendLoad(): void {
    this.#setState('loading');
    this.#send({ kind: MessageKind.Load, msg: this.#assignment!.load });
  }

  get inFlightCount(): number {
    return this.#inFlight.size;
  }

  get isIdle(): boolean {
    return this.state === 'ready' && this.#killedBy === null && this.#inFlight.size < this.capacity;
  }

  get isVacant(): boolean {
    return this.isIdle && this.#inFlight.size === 0;
  }

  run(msg: InferMessage, jobs: readonly Job[]): void {
    this.#inFlight.set(msg.batchId, { msg, jobs });
    this.#send({ kind: MessageKind.Infer, msg });
  }

  holds(job: Job): boolean {
    for (const b of this.#inFlight.values()) if (b.jobs.includes(job)) return true;
    return false;
  }

  cancel(job: Job): void {
    this.#send({ kind: MessageKind.Cancel, msg: { id: job.id } });
  }

  acknowledge(job: Job, bytes: number): void {
    this.#send({ kind: MessageKind.ChunkAck, msg: { id: job.id, bytes } });
  }

  /** SIGKILL, not a polite request: onnxruntime-node leaks on session release, so memory only comes back with the process. */
  kill(reason: KillReason): void {
    // The first reason stands: a worker killed for a timeout and then stopped by an unload timed out.
    this.#killedBy ??= reason;
    if (this.#child && this.exitInfo === null) this.#child.kill('SIGKILL');
  }

  retire(): void {
    if (this.state !== 'stopped' && this.state !== 'failed') this.#setState('stopping');
  }

  /** Stops the process and resolves once it has exited and its memory is released. */
  async stop(): Promise<WorkerExit> {
    this.retire();
    if (kProfilerArgs.length > 0 && this.#channel && !this.exitInfo) {
      // A profiled worker writes its profile on a clean exit: close its channel (it exits on 'end'), then kill.
      this.#killedBy ??= 'stopped';
      this.#channel.end();
      await within(this.#exited, kProfileExitMs, null);
    }
    this.kill('stopped');
    return this.#exited;
  }

  measureMemory(): Promise<number> {
    return this.pid && !this.exitInfo ? processMemoryBytes(this.pid) : Promise.resolve(0);
  }

  get exited(): Promise<WorkerExit> {
    return this.#exited;
  }

  #send(frame: Frame): void {
    if (this.#channel && !this.exitInfo) writeFrame(this.#channel, frame, 'tick');
  }

  #setState(state: WorkerState): void {
    this.state = state;
  }

  #onFrame(frame: Frame): void {
    switch (frame.kind) {
      case MessageKind.Started:
        this.hasStarted = true;
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
        if (this.state === 'loading') this.#setState('ready');
        this.#resolveLoad(frame.msg);
        break;
      case MessageKind.LoadFailed:
        this.#failLoad(MmeError.fromWire(frame.msg.error), 'stopped');
        break;
      case MessageKind.Result: {
        const batch = this.#inFlight.get(frame.msg.batchId);
        if (!batch) break;
        // An independent batch is answered one request at a time; the batch is held until the last.
        const left = (this.#unanswered.get(batch) ?? batch.jobs.length) - frame.msg.responses.length;
        const done = left <= 0;
        if (done) {
          this.#inFlight.delete(frame.msg.batchId);
          this.#unanswered.delete(batch);
        } else {
          this.#unanswered.set(batch, left);
        }
        this.#listener?.result(this, batch, frame.msg, done);
        break;
      }
      case MessageKind.Chunk:
        this.#listener?.chunk(this, frame.msg);
        break;
      default:
        break;
    }
  }

  #failLoad(err: MmeError, kill: KillReason): void {
    if (this.#loadSettled) return;
    this.#loadSettled = true;
    this.loadError = err;
    clearTimeout(this.#loadTimer!);
    this.#setState('failed');
    this.kill(kill);
    this.#rejectLoad(err);
  }

  #onExit(code: number | null, signal: NodeJS.Signals | null): void {
    clearTimeout(this.#loadTimer!);
    WorkerHandle.live.delete(this);
    const exit: WorkerExit = { code, signal, reason: exitReason({ code, signal, killedBy: this.#killedBy, heapExhausted: this.#heapExhausted }) };
    this.exitInfo = exit;
    if (!this.#loadSettled) this.#failLoad(loadExitError(this.id, exit), 'stopped');
    this.#setState(exit.reason === 'stopped' && this.state === 'stopping' ? 'stopped' : 'failed');
    this.#channel?.destroy();
    // A pipelined worker runs its batches one after another, so only the oldest was running; a
    // preload_model process runs all of its slots at once.
    const batches = [...this.#inFlight.values()];
    this.#inFlight.clear();
    const concurrent = this.#assignment?.load.concurrentBatches ?? false;
    const running = concurrent ? batches : batches.slice(0, 1);
    const waiting = concurrent ? [] : batches.slice(1);
    this.#resolveExit(exit);
    this.emit('exit', exit);
    this.#listener?.exit(this, exit, running, waiting);
  }
}
