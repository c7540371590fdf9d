/**
 * A worker process as the server sees it: spawned, spoken to in frames over fd 3, killed, reaped.
 * It owns the batches sent to it until each is answered or the process ends; at exit it hands them
 * back with the exit's reason (exit-reason.ts), split into the ones running (each owner's oldest)
 * and the ones still waiting in its pipe. What the process holds — one model (WorkerHandle) or many
 * (HostProcess) — is the subclass's business: each batch is tagged with the owner its answers go to.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import type { Socket } from 'node:net';
import type { Log } from '../../logger';
import type { Clock } from '../../util/clock';
import { within } from '../../util/within';
import { writeFrame } from '../../protocol/frame-codec';
import { FrameReader } from '../../protocol/frame-reader';
import { MessageKind, type Frame, type InferMessage, type ResultMessage, type StartedMessage } from '../../protocol/messages';
import type { Job } from '../jobs/job';
import { exitReason, type KillReason, type WorkerExit } from './exit-reason';
import { processMemoryBytes } from './process-memory';
import type { InFlightBatch } from './worker-slot';
import { processStates, type ProcessState } from './worker-state';

/**
 * What starts the process: child_process.spawn, or in lifecycle tests a fake process that speaks
 * the frames over fd 3 itself (test/lifecycle/fake-process.ts), so everything above it runs as is.
 */
export type Launch = (cmd: string, args: readonly string[], options: { stdio: Array<'ignore' | 'pipe'>; env: NodeJS.ProcessEnv }) => ChildProcess;

export interface SpawnOptions {
  env: NodeJS.ProcessEnv;
  /** GPU made visible to the process as CUDA_VISIBLE_DEVICES, or -1. */
  gpuId: number;
  log: Log;
  /** Default: child_process.spawn. */
  launch?: Launch;
  /** What its timers (and those of the slots in it) run on: the server's clock. */
  clock: Clock;
}

/** A batch at exit, with who sent it and whether it was the one running. */
export interface LostBatch<Owner> {
  batch: InFlightBatch;
  owner: Owner;
  running: boolean;
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

export abstract class FramedProcess<Owner> extends EventEmitter {
  /** Processes started by this server process (a 507 admission must start none). */
  static spawned = 0;
  /** Every process not yet exited: a bounded shutdown kills what is left. */
  static readonly live = new Set<FramedProcess<unknown>>();
  /** Processes that exited on a promise rejection nobody handled (a bug): the test suite checks there were none. */
  static unhandledRejectionExits = 0;
  id: string;
  readonly gpuId: number;
  pid = 0;
  readonly startTime = new Date();
  #exitInfo: WorkerExit | null = null;
  /** Started arrived: the process is up and its runtime warm. */
  #hasStarted = false;
  readonly #state = processStates(() => `process ${this.id}`);

  protected readonly opts: SpawnOptions;
  /** The one record of work in flight: every batch sent and not answered in full, with its owner. */
  readonly #batches = new Map<number, { batch: InFlightBatch; owner: Owner; left: number }>();
  /** How many of those each owner has: what its idleness is decided by. */
  readonly #perOwner = new Map<Owner, number>();
  #reader: FrameReader | null = null;
  #child: ChildProcess | null = null;
  #channel: Socket | null = null;
  readonly #exited: Promise<WorkerExit>;
  #resolveExit!: (e: WorkerExit) => void;
  #killedBy: KillReason | null = null;
  /** The model whose action the kill was for, if one's. */
  #causedBy: string | null = null;
  #heapExhausted = false;

  constructor(opts: SpawnOptions, id: string) {
    super();
    this.opts = opts;
    this.id = id;
    this.gpuId = opts.gpuId;
    this.#exited = new Promise((r) => (this.#resolveExit = r));
  }

  /** Spawns the process; it reports Started once its runtime is warm. */
  start(): this {
    const node = [process.execPath, ...kProfilerArgs, kWorkerScript];
    const [cmd, ...args] = kSetpriv ? [kSetpriv, '--pdeathsig', 'KILL', ...node] : node;
    const env = { ...this.opts.env };
    if (this.gpuId >= 0) env.CUDA_VISIBLE_DEVICES = String(this.gpuId);
    FramedProcess.spawned++;
    FramedProcess.live.add(this);
    const child = (this.opts.launch ?? spawn)(cmd, args, { stdio: ['ignore', 'pipe', 'pipe', 'pipe'], env });
    this.#child = child;
    this.pid = child.pid ?? 0;
    if (this.pid) fs.writeFile(`/proc/${this.pid}/oom_score_adj`, kWorkerOomScoreAdj, () => undefined);
    for (const stream of [child.stdout!, child.stderr!]) {
      readline.createInterface({ input: stream, crlfDelay: Infinity }).on('line', (line) => {
        if (kHeapExhausted.test(line)) this.#heapExhausted = true;
        this.opts.log(`[${this.id}] ${line}`, { worker: this.id, pid: this.pid });
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
        this.opts.log(`[${this.id}] protocol error: ${(err as Error).message}; stopping the worker`);
        this.kill('protocol-error');
      }
    };
    channel.on('data', onData);
    channel.on('error', () => undefined);
    child.on('error', (err) => this.opts.log(`[${this.id}] spawn failed: ${err.message}`));
    child.on('exit', (code, signal) => {
      // 'exit' can come before the last stderr lines: an abort waits (briefly) for V8's reason.
      if ((signal !== 'SIGABRT' && code !== 134) || child.stderr!.readableEnded) return this.#reap(code, signal);
      let settled = false;
      const settle = () => {
        if (settled) return;
        settled = true;
        this.clock.clearTimeout(bound);
        this.#reap(code, signal);
      };
      const bound = this.clock.setTimeout(settle, kAbortReasonWaitMs);
      child.stderr!.once('end', settle);
    });
    return this;
  }

  /** What its timers run on (the server's clock), and those of the slots it holds. */
  get clock(): Clock {
    return this.opts.clock;
  }

  /** starting → serving → draining → exited (worker-state.ts). */
  get processState(): ProcessState {
    return this.#state.state;
  }

  /** It takes new work: not draining or gone, and not being killed. */
  get open(): boolean {
    const s = this.#state.state;
    return (s === 'starting' || s === 'serving') && this.#killedBy === null;
  }

  get hasStarted(): boolean {
    return this.#hasStarted;
  }

  /** How it ended; null while it runs. */
  get exitInfo(): WorkerExit | null {
    return this.#exitInfo;
  }

  /** It takes no new work from now on (a shared host being recycled): it finishes what it holds, then the server stops it. */
  drain(): void {
    this.#state.to('draining');
  }

  /** The largest frame accepted from the process: what its models may answer with. */
  set maxFrameBytes(n: number) {
    this.#reader!.maxFrameBytes = n;
  }

  get maxFrameBytes(): number {
    return this.#reader!.maxFrameBytes;
  }

  /** Batches sent and not yet answered in full. */
  get batchCount(): number {
    return this.#batches.size;
  }

  /** Batches sent on `owner`'s behalf and not yet answered in full. */
  heldFor(owner: Owner): number {
    return this.#perOwner.get(owner) ?? 0;
  }

  /** Whether `job` is in one of the batches sent on `owner`'s behalf (a timeout or cancel asks: rare). */
  holdsFor(owner: Owner, job: Job): boolean {
    return this.jobFor(owner, job.id) === job;
  }

  /** The request `id` of a batch sent on `owner`'s behalf and not answered in full (a streamed chunk's). */
  jobFor(owner: Owner, id: number): Job | undefined {
    for (const held of this.#batches.values()) {
      if (held.owner !== owner) continue;
      const job = held.batch.jobs.find((j) => j.id === id);
      if (job) return job;
    }
    return undefined;
  }

  /** Requests sent on `owner`'s behalf and not answered yet (an independent batch's are answered one by one). */
  requestsHeldFor(owner: Owner): number {
    let n = 0;
    for (const held of this.#batches.values()) if (held.owner === owner) n += held.left;
    return n;
  }

  /** The server has killed it (or begun to): it takes no more work. */
  get killed(): boolean {
    return this.#killedBy !== null;
  }

  get exited(): Promise<WorkerExit> {
    return this.#exited;
  }

  protected send(frame: Frame): void {
    if (this.#channel && !this.exitInfo) writeFrame(this.#channel, frame, 'tick');
  }

  /** Sends a batch on `owner`'s behalf; the process owns it until it is answered or ends. */
  protected sendBatch(owner: Owner, msg: InferMessage, jobs: readonly Job[]): void {
    // Written first: a frame that cannot be encoded throws before the process is said to hold it.
    this.send({ kind: MessageKind.Infer, msg });
    this.#batches.set(msg.batchId, { batch: { msg, jobs }, owner, left: jobs.length });
    this.#perOwner.set(owner, this.heldFor(owner) + 1);
  }

  /**
   * SIGKILL, not a polite request: onnxruntime-node leaks on session release, so memory only comes
   * back with the process. `causedBy`: the model the kill is for, when it is one model's doing.
   */
  kill(reason: KillReason, causedBy: string | null = null): void {
    // The first reason stands: a worker killed for a timeout and then stopped by an unload timed out.
    if (this.#killedBy === null) {
      this.#killedBy = reason;
      this.#causedBy = causedBy;
    }
    if (this.#child && this.exitInfo === null) this.#child.kill('SIGKILL');
  }

  /** Ends the process and resolves once it has exited and its memory is released. */
  protected async endProcess(): Promise<WorkerExit> {
    if (kProfilerArgs.length > 0 && this.#channel && !this.exitInfo) {
      // A profiled worker writes its profile on a clean exit: close its channel (it exits on 'end'), then kill.
      this.#killedBy ??= 'stopped';
      this.#channel.end();
      await within(this.#exited, kProfileExitMs, null, this.clock);
    }
    this.kill('stopped');
    return this.#exited;
  }

  /** What the process costs now (PSS), bytes; 0 once it is gone. */
  measureMemory(): Promise<number> {
    return this.pid && !this.exitInfo ? processMemoryBytes(this.pid) : Promise.resolve(0);
  }

  /** Started arrived. */
  protected abstract started(msg: StartedMessage): void;
  /** A control frame (Loaded, LoadFailed, Unloaded) or a streamed chunk. */
  protected abstract frame(frame: Frame): void;
  /** Answers to some or all (`done`) of a batch. */
  protected abstract answered(owner: Owner, batch: InFlightBatch, msg: ResultMessage, done: boolean): void;
  /** The process is gone; `lost` is every batch it held. */
  protected abstract onExit(exit: WorkerExit, lost: Array<LostBatch<Owner>>): void;
  /** It runs its batches at once (a preload_model worker), not one after another. */
  protected get concurrent(): boolean {
    return false;
  }

  #onFrame(frame: Frame): void {
    switch (frame.kind) {
      case MessageKind.Started:
        this.#hasStarted = true;
        if (this.#state.state === 'starting') this.#state.to('serving');
        this.started(frame.msg);
        break;
      case MessageKind.Result: {
        const held = this.#batches.get(frame.msg.batchId);
        if (!held) break;
        // An independent batch is answered one request at a time; the batch is held until the last.
        held.left -= frame.msg.responses.length;
        const done = held.left <= 0;
        if (done) {
          this.#batches.delete(frame.msg.batchId);
          const left = this.heldFor(held.owner) - 1;
          if (left > 0) this.#perOwner.set(held.owner, left);
          else this.#perOwner.delete(held.owner);
        }
        this.answered(held.owner, held.batch, frame.msg, done);
        break;
      }
      default:
        this.frame(frame);
    }
  }

  #reap(code: number | null, signal: NodeJS.Signals | null): void {
    FramedProcess.live.delete(this);
    const reason = exitReason({ code, signal, killedBy: this.#killedBy, heapExhausted: this.#heapExhausted });
    const exit: WorkerExit = { code, signal, reason, causedBy: reason === this.#killedBy ? this.#causedBy : null };
    this.#exitInfo = exit;
    this.#state.to('exited');
    if (exit.reason === 'unhandled-rejection') FramedProcess.unhandledRejectionExits++;
    this.#channel?.destroy();
    // Each owner's batches run one after another (different owners' side by side, in a shared
    // host), so each owner's oldest was running; a preload_model process runs all of its slots at once.
    const concurrent = this.concurrent;
    const seen = new Set<Owner>();
    const lost = [...this.#batches.values()].map(({ batch, owner }) => {
      const oldest = !seen.has(owner);
      seen.add(owner);
      return { batch, owner, running: concurrent || oldest };
    });
    this.#batches.clear();
    this.#perOwner.clear();
    this.#resolveExit(exit);
    this.emit('exit', exit);
    this.onExit(exit, lost);
  }
}
