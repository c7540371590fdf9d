/**
 * A model's session runs in its process: timed (what its share of a shared host's CPU is computed
 * from) and, in a shared host, taken in fair turns across models.
 *
 * onnxruntime-node runs a session synchronously inside a setImmediate callback (dist/backend.js):
 * a run holds the host's one thread until it is done. Different models' batches run side by side,
 * yet a slow model's next run is always queued before a tiny model's request is even read, so
 * the tiny one would wait one and a half slow runs. FairTurns gives the thread, run by run, to the
 * waiting model that has had the least of it, and picks only after the event loop has read what
 * arrived meanwhile: a tiny model waits at most for the run in progress.
 */
import { performance } from 'node:perf_hooks';
import type { InferenceSession } from 'onnxruntime-node';

type Run = (...args: unknown[]) => Promise<InferenceSession.ReturnType>;

export class RunClock {
  /** Session run time since the model's load, µs. */
  micros = 0;
  /** Its place in FairTurns: run time counted from the moment it last had to wait, µs. */
  served = 0;
  /** Runs waiting for their turn. */
  readonly waiting: Array<() => void> = [];

  /** Times every run of `session` (a handler's own calls of context.session.run included) and takes it in `turns`. */
  watch(session: InferenceSession, turns: FairTurns): void {
    const run = session.run.bind(session) as Run;
    const timed: Run = (...args) => {
      let t0 = -1;
      // Queued right ahead of onnxruntime's own immediate: it runs as the computation starts.
      setImmediate(() => (t0 = performance.now()));
      const running = run(...args);
      // A run refused before it is queued (bad feeds) settles before the marker: it cost nothing.
      const stop = () => {
        if (t0 < 0) return;
        const micros = Math.round((performance.now() - t0) * 1000);
        this.micros += micros;
        this.served += micros;
      };
      running.then(stop, stop);
      return running;
    };
    session.run = (...args: unknown[]) => turns.take(this, () => timed(...args));
  }
}

/** One session run at a time in the process, the next one for the waiting model served least. */
export class FairTurns {
  readonly #lanes = new Set<RunClock>();
  #busy = false;
  #picking = false;

  take<T>(lane: RunClock, run: () => Promise<T>): Promise<T> {
    return new Promise<void>((resolve) => {
      if (lane.waiting.length === 0) {
        // A model that starts waiting is not owed the time it spent idle: it joins at the least served.
        let floor = Infinity;
        for (const l of this.#lanes) floor = Math.min(floor, l.served);
        if (floor !== Infinity) lane.served = Math.max(lane.served, floor);
      }
      lane.waiting.push(resolve);
      this.#lanes.add(lane);
      this.#pickSoon();
    })
      .then(run)
      .finally(() => {
        this.#busy = false;
        this.#pickSoon();
      });
  }

  /** On the next turn of the event loop: what arrived meanwhile has been read and is waiting too. */
  #pickSoon(): void {
    if (this.#busy || this.#picking || this.#lanes.size === 0) return;
    this.#picking = true;
    setImmediate(() => {
      this.#picking = false;
      let next: RunClock | null = null;
      for (const l of this.#lanes) if (!next || l.served < next.served) next = l;
      if (!next) return;
      const go = next.waiting.shift()!;
      if (next.waiting.length === 0) this.#lanes.delete(next);
      this.#busy = true;
      go();
    });
  }
}
