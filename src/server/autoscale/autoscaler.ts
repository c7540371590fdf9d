/**
 * One model's autoscaling policy (autoscale=on): from its queue, the worker count it should run
 * between min_worker and max_worker. Pure: it reads the injected clock and what it is told.
 *
 * - Up, one worker at a time, on the median queue wait, the backlog per worker (a burst is seen
 *   before its waits are), or runs over busyShare of its workers' time for kShareRounds rounds: a
 *   saturated worker takes each request as it comes, so nothing waits in the queue to be seen.
 * - Down after idleMs quiet, with gaps under each threshold so a steady load does not flap.
 * - Not past cpuWorkers, less a core for the server's own process while it keeps one busy (a tiny
 *   model's requests do): a CPU-bound worker beyond the cores adds no throughput (no_cores).
 * - No change within cooldownMs of the last, so a new worker has loaded before the queue is judged.
 * - Never slower: a scale-up after which the model completes no more requests a second (over a
 *   round, once its cooldown is over, against the round before it) while it still asks for more
 *   added nothing but a process taking turns for the cores: it is undone (no_gain), and no
 *   scale-up is tried again for idleMs.
 *
 * A host runs one session at a time, so a shared model is not scaled there: past `heavyShare` for
 * kShareRounds rounds it is promoted to processes of its own (kModeTraits' promotedTo), and demoted
 * home once at min_worker under half of it for idleMs.
 */
import type { AutoscaleConfig, WorkerMode } from '../../config/types';
import { roundedMs } from '../../logger';
import type { Clock } from '../../util/clock';
import { kModeTraits } from '../hosts/host-policy';

export const kWindowMs = 2000;
/** The window a model's share of a thread (its session runs' time over wall time) is taken over. */
export const kShareWindowMs = 1000;
/** Rounds in a row a share must stay past its threshold (heavy, or busy) before it is acted on. */
export const kShareRounds = 2;
/** Waits the median is taken over at most (the most recent): bounded however high the rate. */
const kSamplesKept = 512;
/** A scale-up must raise the requests completed a second by more than this (a round's noise) to stay. */
const kMinGain = 0.05;
/** Fewer completed in the round before a scale-up than this are too few to judge it by: it stays. */
const kJudgedFrom = 10;

export type Direction = 'up' | 'down';
/** Why a scale-up was skipped: no room in the memory budget, the cores full, or one did not help lately. */
type Skip = 'no_memory' | 'no_cores' | 'no_gain';
export type Reason = 'queue_wait' | 'backlog' | 'busy' | 'idle' | 'promote' | 'demote' | Skip;

/** What the model looks like at a round. */
export interface ModelLoad {
  workers: number;
  min: number;
  max: number;
  queued: number;
  /** Where its workers run now, and where it was loaded (a shared model may be promoted, and comes back). */
  mode: WorkerMode;
  home: WorkerMode;
  /** Its session runs' time so far, over all its workers, µs (only grows). */
  ranMicros: number;
  /** Requests its workers have answered so far (only grows). */
  completed: number;
  /** Its workers are moving (a promotion or demotion under way): nothing else is decided until they are. */
  moving: boolean;
}

export interface Decision {
  direction: Direction;
  reason: Reason;
  target: number;
  why: string;
  /** Where a promotion or demotion moves the workers. */
  to?: WorkerMode;
  /** Set on a scale-up the policy itself skipped: nothing to apply, only to log and count. */
  skipped?: Exclude<Skip, 'no_memory'>;
}

/** What describe shows beside the worker target: the last decision and why, the median wait and where its workers run now. */
export interface AutoscaleStatus {
  lastDecision: { direction: Direction; reason: Reason; outcome: 'applied' | 'skipped'; why: string } | null;
  skippedForMemory: number;
  skippedForCores: number;
  queueWaitP50Ms: number;
  placement: WorkerMode;
  /** Its session runs' share of one thread over the last kShareWindowMs (over 1 with several workers busy). */
  threadShare: number;
}

export class Autoscaler {
  /** Cores the server's own process kept busy over the last round (AutoscaleRounds measures it). */
  serverCores = 0;
  /** Scale-ups skipped since the model last scaled or stopped asking: its log need not say so at every cooldown. */
  skipsInARow = 0;
  readonly #waits: Array<{ at: number; ms: number }> = [];
  #lastChangeAt = -Infinity;
  #quietSince: number | null = null;
  readonly #status: AutoscaleStatus;
  #pending = false;
  /** ranMicros and completed at each round, oldest first: the newest at or before the share window's start, and those in it. */
  readonly #rounds: Array<{ at: number; micros: number; completed: number; queued: number }> = [];
  /** The last scale-up, until it is judged: when, to how many, and the round before it (#window). */
  #trial: { at: number; workers: number; done: number; rate: number; steady: boolean } | null = null;
  /** Over the last round: requests completed, a second, and whether the model was loaded all through it (the round before saw it). */
  #window = { done: 0, rate: 0, steady: false };
  /** No scale-up is tried before this (one did not help). */
  #heldUntil = -Infinity;
  #heavyRounds = 0;
  #busyRounds = 0;
  #coolSince: number | null = null;

  /** `heavyShare`: shared_host_heavy_share, past which a shared model is promoted; 0 = never. */
  constructor(
    private readonly settings: AutoscaleConfig,
    private readonly clock: Clock,
    private readonly heavyShare = 0,
    mode: WorkerMode = 'dedicated',
  ) {
    this.#status = {
      lastDecision: null,
      skippedForMemory: 0,
      skippedForCores: 0,
      queueWaitP50Ms: 0,
      placement: mode,
      threadShare: 0,
    };
  }

  waited(ms: number): void {
    this.#waits.push({ at: this.clock.now(), ms });
    // Trimmed by halves, so a request costs O(1) however high the rate.
    if (this.#waits.length >= 2 * kSamplesKept) this.#waits.splice(0, kSamplesKept);
  }

  medianWaitMs(): number {
    const since = this.clock.now() - kWindowMs;
    const old = this.#waits.findIndex((w) => w.at >= since);
    this.#waits.splice(0, old < 0 ? this.#waits.length : Math.max(old, this.#waits.length - kSamplesKept));
    if (this.#waits.length === 0) return 0;
    const sorted = this.#waits.map((w) => w.ms).sort((a, b) => a - b);
    return sorted[Math.floor((sorted.length - 1) / 2)];
  }

  get status(): AutoscaleStatus {
    return { ...this.#status };
  }

  /** The share of one thread the model's session runs took over the last kShareWindowMs (0 until a round has passed); the requests completed in it kept. */
  #threadShare(load: ModelLoad): number {
    const now = this.clock.now();
    const [a, b] = [this.#rounds.at(-2), this.#rounds.at(-1)];
    this.#rounds.push({ at: now, micros: load.ranMicros, completed: load.completed, queued: load.queued });
    while (this.#rounds.length > 1 && this.#rounds[1].at <= now - kShareWindowMs) this.#rounds.shift();
    const first = this.#rounds[0];
    const done = b ? load.completed - b.completed : 0;
    const steady = b !== undefined && (b.queued > 0 || (a !== undefined && b.completed > a.completed));
    this.#window = { done, rate: b && now > b.at ? (done * 1000) / (now - b.at) : 0, steady };
    return now > first.at ? (load.ranMicros - first.micros) / ((now - first.at) * 1000) : 0;
  }

  /** One round's change, or null; its outcome comes back through applied(), skippedForMemory() or withdrawn(). */
  decide(load: ModelLoad): Decision | null {
    const now = this.clock.now();
    const { queueWaitMs, busyShare, cooldownMs } = this.settings;
    const p50 = this.medianWaitMs();
    const share = this.#threadShare(load);
    Object.assign(this.#status, { queueWaitP50Ms: p50, placement: load.mode });
    this.#status.threadShare = Math.round(share * 1000) / 1000;
    const own = kModeTraits[load.mode].ownProcess;
    const busy = busyShare > 0 && own && share > busyShare * Math.max(1, load.workers);
    this.#busyRounds = busy ? this.#busyRounds + 1 : 0;
    const quiet =
      load.queued === 0 &&
      p50 <= queueWaitMs / 4 &&
      (busyShare === 0 || share < (busyShare / 2) * Math.max(1, load.workers - 1));
    this.#quietSince = quiet ? (this.#quietSince ?? now) : null;
    const movable = kModeTraits[load.home].promotedTo !== null && this.heavyShare > 0;
    this.#heavyRounds = movable && !own && share > this.heavyShare ? this.#heavyRounds + 1 : 0;
    const cool = movable && own && load.queued === 0 && share < this.heavyShare / 2;
    this.#coolSince = cool ? (this.#coolSince ?? now) : null;
    if (this.#pending || load.moving || now - this.#lastChangeAt < cooldownMs) return null;
    const d = this.#undo(load, now, p50, share) ?? this.#evaluate(load, now, p50, share, movable);
    // A round that asks for nothing ends a run of skips: the next skip starts a new one.
    if (d === null) this.skipsInARow = 0;
    return d;
  }

  /** `movable`: a model whose home is a shared host, with promotion on. */
  #evaluate(load: ModelLoad, now: number, p50: number, share: number, movable: boolean): Decision | null {
    const { idleMs, cpuWorkers } = this.settings;
    const shareFigures = `its runs took ${Math.round(share * 100)} % of a thread over ${kShareWindowMs / 1000} s`;
    // In a shared host a second slot adds no compute (the host runs one session at a time): a hot model moves out.
    if (!kModeTraits[load.mode].ownProcess) {
      if (this.#heavyRounds < kShareRounds) return null;
      const why = `${shareFigures}, over shared_host_heavy_share=${this.heavyShare} at ${this.#heavyRounds} rounds in a row`;
      return this.#asked('up', 'promote', load.workers, why, kModeTraits[load.home].promotedTo!);
    }
    if (movable && load.workers <= load.min && this.#coolSince !== null && now - this.#coolSince >= idleMs) {
      const why = `${shareFigures}, under half of shared_host_heavy_share=${this.heavyShare} for ${Math.round((now - this.#coolSince) / 1000)} s (autoscale_idle_seconds=${idleMs / 1000}), at min_worker=${load.min}`;
      return this.#asked('down', 'demote', load.workers, why, load.home);
    }
    const up = load.workers < load.max ? this.#wantsMore(load, p50, shareFigures) : null;
    const held = `skipped: a scale-up did not help within the last autoscale_idle_seconds=${idleMs / 1000}`;
    if (up && now < this.#heldUntil) return this.#skip('no_gain', up.reason, load.workers + 1, `${up.why}; ${held}`);
    // The server's process counts as a user of the cores it keeps busy more than half the time.
    const server = Math.round(this.serverCores);
    const full = `skipped: ${load.workers} worker(s) is the most the cores run at once (autoscale_cores over onnx_intra_op_threads${server ? `, less ${server} core(s) the server's own process keeps busy` : ''})`;
    if (up && cpuWorkers > 0 && load.workers >= Math.max(1, cpuWorkers - server))
      return this.#skip('no_cores', up.reason, load.workers + 1, `${up.why}; ${full}`);
    // A round that did not see the model's load all through cannot tell what its requests take of the server: the next one decides.
    if (up && load.workers > 0 && load.workers >= cpuWorkers - 1 && cpuWorkers > 0 && !this.#window.steady) return null;
    if (up) return this.#asked('up', up.reason, load.workers + 1, up.why);
    if (load.workers <= load.min || this.#quietSince === null || now - this.#quietSince < idleMs) return null;
    const why = `quiet for ${Math.round((now - this.#quietSince) / 1000)} s (autoscale_idle_seconds=${idleMs / 1000}); min_worker=${load.min}`;
    return this.#asked('down', 'idle', load.workers - 1, why);
  }

  /** Why the model asks for one worker more now, or null. */
  #wantsMore(load: ModelLoad, p50: number, shareFigures: string): { reason: Reason; why: string } | null {
    const { queueWaitMs, backlogPerWorker, busyShare } = this.settings;
    const figures = `median queue wait ${roundedMs(p50)} over ${kWindowMs / 1000} s, ${load.queued} queued for ${load.workers} worker(s)`;
    if (p50 > queueWaitMs) return { reason: 'queue_wait', why: `${figures}; autoscale_queue_wait_ms=${queueWaitMs}` };
    if (load.queued / Math.max(1, load.workers) > backlogPerWorker || (load.workers === 0 && load.queued > 0))
      return {
        reason: 'backlog',
        why: `${figures}; ${load.workers === 0 ? 'none running (min_worker=0)' : `autoscale_backlog_per_worker=${backlogPerWorker}`}`,
      };
    if (this.#busyRounds < kShareRounds) return null;
    const why = `${shareFigures} for ${load.workers} worker(s), over autoscale_busy_share=${busyShare} a worker at ${this.#busyRounds} rounds in a row`;
    return { reason: 'busy', why };
  }

  /**
   * The last scale-up, once its cooldown is over: undone if the model completes no more requests a
   * second than in the round before it while it still asks for more (a round partly idle, or too
   * few to judge by: it stays).
   */
  #undo(load: ModelLoad, now: number, p50: number, share: number): Decision | null {
    const trial = this.#trial;
    if (!trial || now - trial.at < kShareWindowMs) return null;
    const { rate } = this.#window;
    const more = this.#wantsMore(load, p50, `its runs took ${Math.round(share * 100)} % of a thread`);
    const judged = trial.steady && trial.done >= kJudgedFrom && load.workers === trial.workers;
    if (!judged || rate > trial.rate * (1 + kMinGain) || !more) {
      this.#trial = null;
      return null;
    }
    const why = `${Math.round(rate)} requests a second completed with ${trial.workers} worker(s) against ${Math.round(trial.rate)} before the scale-up, and still ${more.why}`;
    return this.#asked('down', 'no_gain', trial.workers - 1, why);
  }

  /** A scale-up skipped here (the cores are full, or one did not help lately): counted, and the cooldown starts as after any decision. */
  #skip(skipped: NonNullable<Decision['skipped']>, reason: Reason, target: number, why: string): Decision {
    const d: Decision = { direction: 'up', reason, target, why, skipped };
    this.#settle(d, 'skipped', d.why);
    this.#busyRounds = 0;
    if (skipped === 'no_cores') this.#status.skippedForCores++;
    return d;
  }

  #asked(direction: Direction, reason: Reason, target: number, why: string, to?: WorkerMode): Decision {
    this.#pending = true;
    return to ? { direction, reason, target, why, to } : { direction, reason, target, why };
  }

  /** The decision was applied: the cooldown starts, and after a step down (or a move) the next quiet period. */
  applied(d: Decision): void {
    this.#settle(d, 'applied', d.why);
    // A worker more is judged once its cooldown is over; one that did not help holds the next back.
    const resized = d.direction === 'up' && !d.to;
    this.#trial = resized ? { at: this.clock.now(), workers: d.target, ...this.#window } : null;
    if (d.reason === 'no_gain') this.#heldUntil = this.clock.now() + this.settings.idleMs;
    if (d.direction === 'down') this.#quietSince = this.clock.now();
    this.#heavyRounds = 0;
    this.#busyRounds = 0;
    this.#coolSince = null;
    if (d.to) this.#status.placement = d.to;
  }

  /** A scale-up the memory budget had no room for: counted, and the cooldown starts all the same. */
  skippedForMemory(d: Decision, why: string): void {
    this.#settle(d, 'skipped', `${d.why}; skipped: ${why}`);
    this.#status.skippedForMemory++;
  }

  /** The decision could not be tried (another operation held the model): asked again next round. */
  withdrawn(): void {
    this.#pending = false;
  }

  /** An applied decision ends a run of skips; a skipped one continues it. */
  #settle(d: Decision, outcome: 'applied' | 'skipped', why: string): void {
    this.#pending = false;
    this.#lastChangeAt = this.clock.now();
    this.skipsInARow = outcome === 'applied' ? 0 : this.skipsInARow + 1;
    this.#status.lastDecision = { direction: d.direction, reason: d.reason, outcome, why };
  }
}
