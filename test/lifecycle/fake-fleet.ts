/**
 * Dedicated workers on fake processes (fake-process.ts), seen one model's worker at a time: the
 * server's own HostProcess and ModelSlot run as they are, and the test decides when a worker loads,
 * answers, dies or exits after a kill, so lifecycle races are replayed in a chosen order, without
 * sleeps. Shared hosts use the fake processes directly (processHarness).
 */
import { MmeError } from '../../src/errors';
import type { HostProcess } from '../../src/server/hosts/host-process';
import type { ModelSlot } from '../../src/server/hosts/model-slot';
import type { KillReason, WorkerExit } from '../../src/server/processes/exit-reason';
import type { Launch, ProcessRegistry } from '../../src/server/processes/worker-spawn';
import { VirtualClock } from '../helpers/virtual-clock';
import { FakeProcesses, type FakeProcess, type FakeProcessOptions } from './fake-process';

export interface FakeOptions extends FakeProcessOptions {
  /** What a worker's process costs (its PSS), by model name (default 10 MB). */
  memoryBytes: (model: string) => number;
  /** Starts this many more workers, then refuses (throws, as a full set of shared hosts does); default: never refuses. */
  startsLeft: number;
}

/** One dedicated worker: its fake process, and the server's host and slot for it. */
export class FakeWorker {
  constructor(
    readonly process: FakeProcess,
    readonly host: HostProcess,
    readonly slot: ModelSlot,
  ) {}

  get id(): string {
    return this.slot.id;
  }

  get model(): string {
    return this.slot.modelName;
  }

  /** Batches the process was sent and has not answered. */
  get batches(): readonly unknown[] {
    return this.process.batches;
  }

  get killedBy(): KillReason | null {
    return this.host.killedBy;
  }

  get exitInfo(): WorkerExit | null {
    return this.host.exitInfo;
  }

  get alive(): boolean {
    return this.process.alive;
  }

  /** Answers its Load with Loaded (once the Load has come, if it has not yet). */
  load(): void {
    this.process.answerLoad();
  }

  /** Answers its Load with LoadFailed (MME_ERR_INVALID_MODEL, `err`'s message). */
  failLoad(err: MmeError): void {
    this.process.answerLoad(err.message);
  }

  /** Answers the oldest batch: every request 200 with its job id. */
  answer(): void {
    this.process.answer();
  }

  /** The process ends: by the signal the server sent, or on its own. */
  exit(signal: NodeJS.Signals | null = null, code: number | null = signal ? null : 1): void {
    this.process.exit(code, signal);
  }
}

/** Every dedicated worker a server started, for the test to find and drive. */
export class FakeFleet {
  readonly #workers: FakeWorker[] = [];
  /** Processes launched whose host and slot the fleet has not looked up yet. */
  readonly #launched: FakeProcess[] = [];
  readonly options: FakeOptions;
  /** The server's clock, which the workers' load timers run on too. */
  readonly clock = new VirtualClock();
  readonly #processes: FakeProcesses;

  /** `registry`: the server's processes, where the fleet finds the host each fake process is. */
  constructor(
    private readonly registry: ProcessRegistry,
    options: Partial<FakeOptions> = {},
  ) {
    this.#processes = new FakeProcesses({ autoLoad: true, ...options });
    this.options = Object.assign(this.#processes.options, {
      memoryBytes: () => 10 * 2 ** 20,
      startsLeft: Infinity,
      ...options,
    });
  }

  readonly launch: Launch = (...args) => {
    if (this.options.startsLeft-- <= 0) throw new MmeError('MME_ERR_NO_WORKER', 'no room to start a worker');
    const child = this.#processes.launch(...args);
    this.#launched.push(this.#processes.byPid(child.pid!)!);
    queueMicrotask(() => this.#lookUp());
    return child;
  };

  /** Every worker started, oldest first. */
  get workers(): readonly FakeWorker[] {
    this.#lookUp();
    return this.#workers;
  }

  /** The server admits a worker's slot as soon as it has spawned the process, in the same turn: from then on, both are found. */
  #lookUp(): void {
    for (const p of this.#launched.splice(0)) {
      const host = ([...this.registry.live] as HostProcess[]).find((h) => h.pid === p.pid)!;
      this.#workers.push(new FakeWorker(p, host, host.slots[0]));
    }
  }

  /** What a fake process costs: its model's memoryBytes while it runs. */
  readonly readMemory = async (pid: number): Promise<number> => {
    const w = this.workers.find((x) => x.process.pid === pid);
    return w?.alive ? this.options.memoryBytes(w.model) : 0;
  };

  of(model: string): FakeWorker[] {
    return this.workers.filter((w) => w.model === model);
  }

  live(model?: string): FakeWorker[] {
    return this.workers.filter((w) => w.alive && (model === undefined || w.model === model));
  }

  /** Every live worker that holds a batch answers its oldest one. */
  answerEach(): void {
    for (const w of this.live()) if (w.batches.length > 0) w.answer();
  }
}
