/**
 * A shared host: one worker process holding many models' sessions, one per slot (Ray Serve's model
 * multiplexing). Each model in it is a HostedModel; the host routes frames to them by slot and
 * batch id, and at its exit hands each one back the batches it held.
 *
 *   starting ──Started──▶ serving ──recycle──▶ draining ──last model moved out, stop()──▶ exited
 *
 * (the process table of processes/worker-state.ts, which dedicated workers share).
 *
 * Memory: `baseBytes` is the host's PSS once started, before any model; each model's cost is the
 * growth of the host's resident memory across its load (loads run one at a time in the host), and
 * at least the smallest session's cost there plus the model file's size: a load that reuses memory
 * freed by an unload shows little growth, yet its session holds its weights all the same.
 * What the host holds beyond base + costs is memory freed by unloads that onnxruntime and the
 * allocator keep: the waste that recycling gives back.
 */
import { MmeError } from '../../errors';
import { MessageKind, type ChunkMessage, type Frame, type LoadedMessage, type ResultMessage, type StartedMessage } from '../../protocol/messages';
import { IdAllocator, MAX_U32 } from '../../protocol/ids';
import type { WorkerExit } from '../processes/exit-reason';
import { FramedProcess, type LostBatch, type SpawnOptions } from '../processes/framed-process';
import type { InFlightBatch } from '../processes/worker-slot';
import type { SlotView } from '../processes/slot-lifecycle';

/** What the host needs of a model in one of its slots (HostedModel): where it routes that slot's frames. */
export interface HostSlot {
  readonly modelName: string;
  /** Whether its Loaded arrived, and what its load cost (bytes). */
  readonly lifecycle: Pick<SlotView, 'loaded' | 'memoryBytes'>;
  /** Its Load was sent and is not answered yet. */
  readonly loadPending: boolean;
  /** What its session runs have taken since its load (µs), as the host last reported. */
  readonly runMicros: number;
  sendLoad(): void;
  onLoaded(msg: LoadedMessage): void;
  onLoadFailed(err: MmeError): void;
  onChunk(msg: ChunkMessage): void;
  onUnloaded(): void;
  onAnswered(batch: InFlightBatch, msg: ResultMessage, done: boolean): void;
  onHostExit(exit: WorkerExit, running: InFlightBatch[], waiting: InFlightBatch[], displaced: boolean): void;
  relocate(): void;
}

export class HostProcess extends FramedProcess<HostSlot> {
  /** PSS once started, before any model (bytes); 0 until measured. */
  baseBytes = 0;
  /** PSS at the last measurement (bytes). */
  measuredBytes = 0;
  /** What the smallest session costs in it (bytes), measured by the host at start: the least a model is charged. */
  sessionBytes = 0;
  readonly #slots = new Map<number, HostSlot>();
  /**
   * Tallies kept as slots come and go, so placement costs the same with ten thousand models as with
   * ten: how many slots each model name holds, and each loaded slot's cost (fixed at its load).
   */
  readonly #names = new Map<string, number>();
  readonly #charged = new Map<number, number>();
  #loadedBytes = 0;
  #heavyModel: string | null = null;
  /** Slots are u32 and a host may load and unload models for ever: they wrap, skipping the ones held. */
  readonly slotIds = new IdAllocator(MAX_U32);

  constructor(opts: SpawnOptions, id: string, private readonly events: { started(host: HostProcess): void; unloaded(host: HostProcess): void }) {
    super(opts, id);
  }

  get models(): readonly HostSlot[] {
    return [...this.#slots.values()];
  }

  get modelCount(): number {
    return this.#slots.size;
  }

  /** What its loaded models cost, as measured at their loads (bytes). */
  get modelBytes(): number {
    return this.#loadedBytes;
  }

  /** How many of its models have loaded (modelBytes is theirs). */
  get loadedCount(): number {
    return this.#charged.size;
  }

  /**
   * What placement compares (bytes): its models' measured costs, a load in progress counted as
   * `loadingBytes`. Bases are left out: every host is the same process.
   */
  placementBytes(loadingBytes: number): number {
    return this.#loadedBytes + (this.#slots.size - this.#charged.size) * loadingBytes;
  }

  /** Base plus its models (bytes). */
  get usedBytes(): number {
    return this.baseBytes + this.modelBytes;
  }

  /** Memory held beyond base + models at the last measurement: freed by unloads, not given back (bytes). */
  get wasteBytes(): number {
    return Math.max(0, this.measuredBytes - this.usedBytes);
  }

  /** The model taking most of this host's thread, while host-balance.ts says one does: placement goes elsewhere. */
  get heavyModel(): string | null {
    return this.#heavyModel;
  }

  markHeavy(model: string | null): void {
    this.#heavyModel = model;
  }

  holdsModel(name: string): boolean {
    return this.#names.has(name);
  }

  /** Takes a model in: a slot now; the model sends its Load once the host has started. */
  admit(model: HostSlot, maxFrameBytes: number): number {
    const slot = this.slotIds.next((s) => this.#slots.has(s));
    this.#slots.set(slot, model);
    this.#names.set(model.modelName, (this.#names.get(model.modelName) ?? 0) + 1);
    this.maxFrameBytes = Math.max(this.maxFrameBytes, maxFrameBytes);
    return slot;
  }

  /** A frame on a model's behalf (Load, Unload, Cancel, ChunkAck). */
  control(frame: Frame): void {
    this.send(frame);
  }

  runFor(model: HostSlot, batch: InFlightBatch): void {
    this.sendBatch(model, batch.msg, batch.jobs);
  }

  /** The model's slot is released, or was never loaded: forget it. */
  forget(slot: number): void {
    const model = this.#slots.get(slot);
    if (!model) return;
    this.#slots.delete(slot);
    const held = this.#names.get(model.modelName)!;
    if (held > 1) this.#names.set(model.modelName, held - 1);
    else this.#names.delete(model.modelName);
    this.#loadedBytes -= this.#charged.get(slot) ?? 0;
    this.#charged.delete(slot);
  }

  stop(): Promise<WorkerExit> {
    return this.endProcess();
  }

  protected started(msg: StartedMessage): void {
    this.sessionBytes = msg.sessionBytes;
    this.events.started(this);
    for (const m of this.#slots.values()) m.sendLoad();
  }

  protected frame(frame: Frame): void {
    switch (frame.kind) {
      case MessageKind.Loaded: {
        const model = this.#slots.get(frame.msg.slot);
        model?.onLoaded(frame.msg);
        if (model?.lifecycle.loaded && !this.#charged.has(frame.msg.slot)) {
          this.#charged.set(frame.msg.slot, model.lifecycle.memoryBytes);
          this.#loadedBytes += model.lifecycle.memoryBytes;
        }
        break;
      }
      case MessageKind.LoadFailed:
        this.#slots.get(frame.msg.slot)?.onLoadFailed(MmeError.fromWire(frame.msg.error));
        break;
      case MessageKind.Chunk:
        this.#slots.get(frame.msg.slot)?.onChunk(frame.msg);
        break;
      case MessageKind.Unloaded: {
        const model = this.#slots.get(frame.msg.slot);
        this.forget(frame.msg.slot);
        model?.onUnloaded();
        this.events.unloaded(this);
        break;
      }
      default:
        break;
    }
  }

  protected answered(owner: HostSlot, batch: InFlightBatch, msg: ResultMessage, done: boolean): void {
    owner.onAnswered(batch, msg, done);
  }

  protected onExit(exit: WorkerExit, lost: Array<LostBatch<HostSlot>>): void {
    const models = [...this.#slots.values()];
    for (const slot of [...this.#slots.keys()]) this.forget(slot);
    const suspect = suspectLoad(exit, lost, models);
    // Its models' batches run side by side: each running request is told who else was running.
    const told: WorkerExit = { ...exit, runningModels: [...new Set(lost.filter((l) => l.running).map((l) => l.owner.modelName))] };
    for (const m of models) {
      const mine = lost.filter((l) => l.owner === m);
      m.onHostExit(told, mine.filter((l) => l.running).map((l) => l.batch), mine.filter((l) => !l.running).map((l) => l.batch), exit.reason !== 'stopped' && m !== suspect);
    }
  }
}

/**
 * The load a host's death may be the doing of: the one the host was running (it runs loads one at
 * a time, in the order sent), unless a batch was running (any model's: they run beside the loads),
 * which its failure then answers for. None
 * for a kill at a timeout: a load that ran out of time has failed already, and a batch answers for
 * its own. Every other model loading there is displaced: its load starts again in another host.
 */
function suspectLoad(exit: WorkerExit, lost: Array<LostBatch<HostSlot>>, models: readonly HostSlot[]): HostSlot | null {
  if (exit.reason === 'timeout-kill' || lost.some((l) => l.running)) return null;
  return models.find((m) => m.loadPending) ?? null;
}
