/**
 * A worker process as the server sees it (a TorchServe worker, a Ray Serve replica): spawned,
 * spoken to in frames over fd 3, killed, reaped. It holds one model's session per slot (ModelSlot),
 * routes frames to them, and at its exit hands each slot back the batches it held, running or
 * still waiting in its pipe. What differs by mode is its HostPolicy's.
 */
import fs from 'node:fs';
import { performance } from 'node:perf_hooks';
import { MmeError } from '../../errors';
import type { Log } from '../../logger';
import type { Clock } from '../../util/clock';
import { deferred } from '../../util/deferred';
import { within } from '../../util/within';
import { writeFrame } from '../../protocol/frame-codec';
import { MessageKind, type Frame, type InferMessage } from '../../protocol/messages';
import type { Job } from '../jobs/job';
import { exitReason, type KillReason, type WorkerExit } from '../processes/exit-reason';
import type { ProcessLimits } from '../processes/limit-enforcement';
import { processStates, type ProcessState } from '../processes/worker-state';
import { kWorkersProfiled, processMemoryBytes, spawnProcess, type Launch } from '../processes/worker-spawn';
import type { ProcessRegistry, SpawnedWorker } from '../processes/worker-spawn';
import { BatchesInFlight } from './batches-in-flight';
import type { BodyHandoff, BodyRing } from './body-handoff';
import type { HostPolicy } from './host-policy';
import type { ModelSlot } from './model-slot';

export interface SpawnOptions {
  env: NodeJS.ProcessEnv;
  log: Log;
  launch?: Launch;
  /** Default: its PSS; fake processes have none. */
  readMemory?: (pid: number) => Promise<number>;
  clock: Clock;
  processes: ProcessRegistry;
  /** null = large request bodies go over its socket. */
  bodyHandoff?: BodyHandoff | null;
  /** Its model's memory_limit_mb and cpu_limit, joined at spawn; none for a shared host. */
  limits?: ProcessLimits | null;
}

/** What the process's owner (a host pool, a spare pool) hears of it. Called synchronously; must not throw. */
export interface HostEvents {
  onStarted?(host: HostProcess): void;
  onUnloaded?(host: HostProcess): void;
  /** Called before its slots hear of it. */
  onExit?(host: HostProcess): void;
}

const kProfileExitMs = 5000;
/** What V8 prints before it aborts on an exhausted heap (SIGABRT is otherwise any native crash). */
const kHeapExhausted = /JavaScript heap out of memory/;

export class HostProcess<P extends HostPolicy = HostPolicy> {
  pid = 0;
  /** performance.now() at spawn: a load's wait for start-up counts from here or from its assignment. */
  readonly spawnedAt = performance.now();
  /** What the smallest session costs in it (bytes), measured by a shared host at start: the least a model is charged. */
  sessionBytes = 0;
  /** Set once, by the Started frame; read-only to all but this class. */
  hasStarted = false;
  exitInfo: WorkerExit | null = null;
  /** The first kill's reason: a worker killed for a timeout and then stopped by an unload timed out. */
  killedBy: KillReason | null = null;
  /** A dedicated worker's is its model's worker id (a spare takes one when taken). */
  #label: string;
  readonly #state = processStates(() => `process ${this.#label}`);
  readonly #slots = new Map<number, ModelSlot>();
  readonly #batches = new BatchesInFlight<ModelSlot>();
  readonly batches: Pick<BatchesInFlight<ModelSlot>, 'size' | 'of' | 'requestsOf' | 'jobOf'> = this.#batches;
  #ring: BodyRing | null = null;
  #spawned: SpawnedWorker | null = null;
  readonly #exit = deferred<WorkerExit>();
  readonly exited = this.#exit.promise;
  #causedBy: string | null = null;
  #heapExhausted = false;

  constructor(
    readonly opts: SpawnOptions,
    readonly id: string,
    readonly policy: P,
    private readonly events: HostEvents = {},
  ) {
    this.#label = id;
  }

  start(): this {
    const env = { ...this.opts.env };
    this.policy.env(env);
    const opened = this.opts.bodyHandoff?.open() ?? null;
    if (opened) env.MME_BODY_RING_FD = '4';
    else delete env.MME_BODY_RING_FD;
    const spawned = spawnProcess(
      this.opts.launch,
      env,
      this.opts.clock,
      {
        onLine: (line) => {
          if (kHeapExhausted.test(line)) this.#heapExhausted = true;
          this.opts.log(`[${this.#label}] ${line}`, { worker: this.#label, pid: this.pid });
        },
        onFrame: (f) => this.#onFrame(f),
        onProtocolError: (err) => {
          this.opts.log(`[${this.#label}] protocol error: ${err.message}; stopping the worker`);
          this.kill('protocol-error');
        },
        onExit: (code, signal) => this.#reap(code, signal),
      },
      opened?.workerFd,
    );
    // The child has its own copy of the read-only descriptor now.
    if (opened) fs.closeSync(opened.workerFd);
    this.#ring = opened?.ring ?? null;
    this.opts.processes.spawned++;
    this.opts.processes.live.add(this);
    this.#spawned = spawned;
    this.pid = spawned.child.pid ?? 0;
    this.opts.limits?.joined(this);
    spawned.child.on('error', (err) => this.opts.log(`[${this.#label}] spawn failed: ${err.message}`));
    return this;
  }

  get processState(): ProcessState {
    return this.#state.state;
  }

  get open(): boolean {
    const s = this.#state.state;
    return (s === 'starting' || s === 'serving') && this.killedBy === null;
  }

  /** A shared host being recycled: it finishes what it holds, then the server stops it. */
  drain(): void {
    this.#state.to('draining');
  }

  get slots(): readonly ModelSlot[] {
    return [...this.#slots.values()];
  }

  get slotCount(): number {
    return this.#slots.size;
  }

  /** Takes a model in: a slot id now; the slot sends its Load once the process has started. */
  admit(slot: ModelSlot, maxFrameBytes: number): number {
    const slotId = this.policy.admit?.(slot, (s) => this.#slots.has(s)) ?? 0;
    this.#slots.set(slotId, slot);
    this.#label = this.policy.sharedHostId?.(this) ?? slot.id;
    // The largest frame accepted from the process: what its models may answer with (a dedicated
    // worker's one slot allows more than the 1 MiB a process is held to before it has a model).
    const reader = this.#spawned!.reader;
    reader.maxFrameBytes = Math.max(reader.maxFrameBytes, maxFrameBytes);
    return slotId;
  }

  send(frame: Frame): void {
    if (this.#spawned && !this.exitInfo) writeFrame(this.#spawned.channel, frame, 'tick');
  }

  sendBatch(slot: ModelSlot, msg: InferMessage, jobs: readonly Job[]): void {
    // Written first: a frame that cannot be encoded throws before the process is said to hold it.
    // `msg` keeps the bodies the frame has in the ring: a retry elsewhere needs them.
    const frame = this.#ring?.place(msg) ?? msg;
    try {
      this.send({ kind: MessageKind.Infer, msg: frame });
    } catch (err) {
      this.#ring?.release(msg.batchId);
      throw err;
    }
    this.#batches.add(slot, msg, jobs);
  }

  forget(slotId: number): ModelSlot | undefined {
    const slot = this.#slots.get(slotId);
    if (!slot) return undefined;
    this.#slots.delete(slotId);
    this.policy.forgotten?.(slot);
    return slot;
  }

  /**
   * SIGKILL, not a polite request: onnxruntime-node leaks on session release, so memory only comes
   * back with the process. `causedBy`: the model the kill is for, when it is one model's doing.
   */
  kill(reason: KillReason, causedBy: string | null = null): void {
    if (this.killedBy === null) {
      this.killedBy = reason;
      this.#causedBy = causedBy;
    }
    if (this.#spawned && this.exitInfo === null) this.#spawned.child.kill('SIGKILL');
  }

  async stop(): Promise<WorkerExit> {
    if (kWorkersProfiled && this.#spawned && !this.exitInfo) {
      // A profiled worker writes its profile on a clean exit: close its channel (it exits on 'end'), then kill.
      this.killedBy ??= 'stopped';
      this.#spawned.channel.end();
      await within(this.exited, kProfileExitMs, null, this.opts.clock);
    }
    this.kill('stopped');
    return this.exited;
  }

  measureMemory(): Promise<number> {
    return this.pid && !this.exitInfo ? (this.opts.readMemory ?? processMemoryBytes)(this.pid) : Promise.resolve(0);
  }

  #onFrame(frame: Frame): void {
    switch (frame.kind) {
      case MessageKind.Started:
        this.hasStarted = true;
        if (this.#state.state === 'starting') this.#state.to('serving');
        this.sessionBytes = frame.msg.sessionBytes;
        this.events.onStarted?.(this);
        for (const s of this.#slots.values()) s.sendLoad();
        break;
      case MessageKind.Result: {
        // An independent batch is answered one request at a time; the batch is held until the last.
        const held = this.#batches.answer(frame.msg.batchId, frame.msg.responses.length);
        if (held && held.left <= 0) this.#ring?.release(frame.msg.batchId);
        held?.slot.onAnswered(held.batch, frame.msg, held.left <= 0);
        break;
      }
      case MessageKind.Loaded:
        this.#slots.get(frame.msg.slot)?.onLoaded(frame.msg);
        break;
      case MessageKind.LoadFailed:
        this.#slots.get(frame.msg.slot)?.onLoadFailed(MmeError.fromWire(frame.msg.error));
        break;
      case MessageKind.Chunk:
        this.#slots.get(frame.msg.slot)?.onChunk(frame.msg);
        break;
      case MessageKind.Unloaded:
        this.forget(frame.msg.slot)?.ended(0);
        this.events.onUnloaded?.(this);
        break;
    }
  }

  #reap(code: number | null, signal: NodeJS.Signals | null): void {
    this.opts.processes.live.delete(this);
    const limitOom = this.opts.limits?.left(this) ?? false;
    const reason = exitReason({ code, signal, killedBy: this.killedBy, heapExhausted: this.#heapExhausted, limitOom });
    const exit: WorkerExit = { code, signal, reason, causedBy: reason === this.killedBy ? this.#causedBy : null };
    this.exitInfo = exit;
    this.#state.to('exited');
    if (exit.reason === 'unhandled-rejection') this.opts.processes.unhandledRejectionExits++;
    this.#spawned?.channel.destroy();
    this.#ring?.close();
    const lost = this.#batches.takeAll();
    const slots = this.slots;
    for (const s of slots) this.forget(s.slotId);
    this.#exit.resolve(exit);
    this.events.onExit?.(this);
    const notice = this.policy.exitNotice?.(exit, lost, slots.find((s) => s.loadPending) ?? null) ?? {
      exit,
      displaced: () => false,
    };
    for (const s of slots) {
      const batches = (running: boolean) =>
        lost.filter((l) => l.slot === s && l.running === running).map((l) => l.batch);
      s.onHostExit(notice.exit, batches(true), batches(false), notice.displaced(s));
    }
  }
}
