/**
 * A model's session runs, timed (its share of a shared host's CPU) and taken in fair turns.
 * onnxruntime-node runs a session synchronously in a setImmediate callback, holding the host's one
 * thread; a slow model's next run is queued before a tiny model's request is even read, so the tiny
 * one would wait one and a half slow runs. FairTurns gives the thread to the waiting model served
 * least, picking only after the event loop has read what arrived: a tiny model waits for one run.
 */
import { performance } from 'node:perf_hooks';
import type { InferenceSession } from 'onnxruntime-node';

type Run = (...args: unknown[]) => Promise<InferenceSession.ReturnType>;

export class RunClock {
  /** Session run time since the model's load, µs. */
  micros = 0;
  /** Its place in FairTurns: run time counted from the moment it last had to wait, µs. */
  served = 0;
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
