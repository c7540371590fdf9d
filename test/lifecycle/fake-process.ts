/**
 * A worker process with no process behind it, below the server's process class: it speaks the
 * frames over its fd 3 as the real worker does, so HostProcess, ModelSlot and HostPool
 * all run as they are, in either worker mode. The test decides when a load finishes, when a
 * batch is answered and when the process dies, so interleavings in shared hosts are replayed in a
 * chosen order, without sleeps.
 */
import type { ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import { Duplex, PassThrough } from 'node:stream';
import { writeFrame } from '../../src/protocol/frame-codec';
import { FrameReader } from '../../src/protocol/frame-reader';
import {
  MessageKind,
  type Frame,
  type InferMessage,
  type LoadMessage,
  type LoadedMessage,
} from '../../src/protocol/messages';
import type { Launch } from '../../src/server/processes/worker-spawn';

export interface FakeProcessOptions {
  /** Answer each Load with Loaded at once (default false: the test calls load()). */
  autoLoad: boolean;
  /** Exit on the next tick after the server's SIGKILL (default true); false: the test calls exit(). */
  autoExit: boolean;
  /** Say Started on the next tick (default true); false: the test calls start(), as a slow start-up. */
  autoStart: boolean;
}

/** Fake pids start above Linux's largest (2^22): no real process has one, and /proc has none of them. */
const kFirstFakePid = 2 ** 23;

const kMetadata: LoadedMessage['metadata'] = {
  irVersion: 8,
  producerName: 'fake',
  producerVersion: '0',
  domain: '',
  modelVersion: 0,
  docString: '',
  opsets: {},
  metadataProps: {},
};

/** Two ends of one in-memory socket: what one writes, the other reads. */
function socketPair(): [Duplex, Duplex] {
  const there = new PassThrough();
  const back = new PassThrough();
  return [Duplex.from({ readable: back, writable: there }), Duplex.from({ readable: there, writable: back })];
}

export class FakeProcess extends EventEmitter {
  readonly stdout = new PassThrough();
  readonly stderr = new PassThrough();
  readonly stdio: [null, PassThrough, PassThrough, Duplex];
  readonly pid: number;
  /** Loads sent and not answered yet, oldest first (a host runs them one at a time, in order). */
  readonly loads: LoadMessage[] = [];
  /** Batches sent and not answered yet, oldest first. */
  readonly batches: InferMessage[] = [];
  /** Ids of the requests the server cancelled (Cancel frames), in order. */
  readonly cancels: number[] = [];
  /** Slots loaded and not released. */
  readonly slots = new Set<number>();
  alive = true;
  readonly #mine: Duplex;
  #loadsReceived = 0;
  #loadsDone = 0;
  /** What to answer the next Load with as soon as it arrives (answerLoad() before the Load came). */
  #nextLoad: { error?: string } | null = null;
  /** A shared host (its Loads say so). */
  #shared = false;
  /** Each slot's session run time so far, µs, as the host reports it. */
  readonly #ranMicros = new Map<number, number>();
  /** Unloads wait for every load sent before them and for their slot's batches, as the real worker's do (worker-process/main.ts). */
  readonly #unloads: Array<{ slot: number; afterLoads: number }> = [];

  constructor(
    private readonly fleet: FakeProcesses,
    pid: number,
  ) {
    super();
    this.pid = pid;
    const [theirs, mine] = socketPair();
    this.#mine = mine;
    this.stdio = [null, this.stdout, this.stderr, theirs];
    const reader = new FrameReader(1 << 30, (f) => this.#onFrame(f));
    mine.on('data', (chunk: Buffer) => reader.push(chunk));
    mine.on('error', () => undefined);
    if (fleet.options.autoStart) setImmediate(() => this.start());
  }

  /** The runtime is up: Started, as the real worker says once it is warm. */
  start(): void {
    this.#send({ kind: MessageKind.Started, msg: { pid: 0, sessionBytes: 1000 } });
  }

  /** The server's SIGKILL: the process ends on the next tick, as a killed one does (unless the test ends it). */
  kill(signal: NodeJS.Signals): boolean {
    if (this.alive && this.fleet.options.autoExit) setImmediate(() => this.exit(null, signal));
    return true;
  }

  /** Answers the oldest pending load: Loaded, or LoadFailed with `error` (a message, of MME_ERR_INVALID_MODEL). */
  load(error?: string): void {
    const load = this.loads.shift();
    if (!load || !this.alive) return;
    if (error) {
      this.#send({
        kind: MessageKind.LoadFailed,
        msg: { slot: load.slot, error: { code: 'MME_ERR_INVALID_MODEL', status: 400, message: error } },
      });
    } else {
      this.slots.add(load.slot);
      this.#send({
        kind: MessageKind.Loaded,
        msg: {
          slot: load.slot,
          rssGrowthBytes: 1,
          pid: 0,
          loadMicros: 1,
          sessionMicros: 1,
          executionProvider: 'cpu',
          graphOptimizationLevel: 'all',
          inputs: [],
          outputs: [],
          streaming: false,
          metadata: kMetadata,
        },
      });
    }
    this.#loadsDone++;
    this.#unloadReady();
  }

  /** Answers the oldest pending load, or the next one as soon as it arrives. */
  answerLoad(error?: string): void {
    if (this.loads.length > 0) this.load(error);
    else this.#nextLoad = { error };
  }

  #unloadReady(): void {
    for (const u of [...this.#unloads]) {
      if (u.afterLoads > this.#loadsDone || this.batches.some((b) => (b.slot ?? 0) === u.slot)) continue;
      this.#unloads.splice(this.#unloads.indexOf(u), 1);
      this.slots.delete(u.slot);
      this.#send({ kind: MessageKind.Unloaded, msg: { slot: u.slot } });
    }
  }

  /** Answers every batch it holds, oldest first, each run taking `runMicros`. */
  answerHeld(runMicros = 1): void {
    while (this.batches.length > 0 && this.alive) this.answer(runMicros);
  }

  /** Answers the oldest batch: every request 200 with its id; its session run took `runMicros` (the host reports each slot's total). */
  answer(runMicros = 1): void {
    const batch = this.batches.shift();
    if (!batch || !this.alive) return;
    const ran = (this.#ranMicros.get(batch.slot ?? 0) ?? 0) + runMicros;
    this.#ranMicros.set(batch.slot ?? 0, ran);
    const responses = batch.requests.map((r) => ({
      id: r.id,
      status: 200,
      contentType: 'application/json',
      headers: {},
      body: Buffer.from(JSON.stringify({ id: r.id })),
    }));
    this.#send({
      kind: MessageKind.Result,
      // As the real worker: only a shared host times its session runs; the handler's time is always reported.
      msg: { batchId: batch.batchId, modelMicros: runMicros, runMicros: this.#shared ? ran : 0, responses },
    });
    this.#unloadReady();
  }

  /** The process ends: by a signal, or on its own with a code. */
  exit(code: number | null, signal: NodeJS.Signals | null): void {
    if (!this.alive) return;
    this.alive = false;
    this.#mine.destroy();
    this.stdout.end();
    this.stderr.end();
    this.emit('exit', code, signal);
  }

  #send(frame: Frame): void {
    if (this.alive) writeFrame(this.#mine as unknown as Socket, frame, 'now');
  }

  #onFrame(frame: Frame): void {
    switch (frame.kind) {
      case MessageKind.Load:
        this.#loadsReceived++;
        this.#shared = frame.msg.shared;
        this.loads.push(frame.msg);
        if (this.#nextLoad) {
          this.load(this.#nextLoad.error);
          this.#nextLoad = null;
        } else if (this.fleet.options.autoLoad) {
          this.load();
        }
        break;
      case MessageKind.Infer:
        this.batches.push(frame.msg);
        break;
      case MessageKind.Cancel:
        this.cancels.push(frame.msg.id);
        break;
      case MessageKind.Unload:
        this.#unloads.push({ slot: frame.msg.slot, afterLoads: this.#loadsReceived });
        this.#unloadReady();
        break;
      default:
        break;
    }
  }
}

/** Every fake process a server started, for the test to find and drive. */
export class FakeProcesses {
  readonly all: FakeProcess[] = [];
  readonly options: FakeProcessOptions;

  constructor(options: Partial<FakeProcessOptions> = {}) {
    this.options = { autoLoad: false, autoExit: true, autoStart: true, ...options };
  }

  readonly launch: Launch = () => {
    const p = new FakeProcess(this, kFirstFakePid + this.all.length);
    this.all.push(p);
    return p as unknown as ChildProcess;
  };

  /** The process `pid`, if one of these. */
  byPid(pid: number): FakeProcess | undefined {
    return pid >= kFirstFakePid ? this.all[pid - kFirstFakePid] : undefined;
  }

  live(): FakeProcess[] {
    return this.all.filter((p) => p.alive);
  }
}
