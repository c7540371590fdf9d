/**
 * One owner's state under one transition table: the state is private to its owner and changes only
 * through `to()`, which refuses any move the table does not list: a move the code did not expect is
 * a bug, and surfaces as one. Tables: a registration's phases (registration.ts), a worker process's
 * and a model's worker's states (worker-state.ts).
 */
export class IllegalStateError extends Error {
  constructor(what: string, from: string, to: string) {
    super(`${what}: illegal state transition ${from} → ${to}`);
  }
}

export class StateMachine<S extends string> {
  #state: S;

  constructor(
    private readonly what: () => string,
    initial: S,
    private readonly table: Readonly<Record<S, readonly S[]>>,
  ) {
    this.#state = initial;
  }

  get state(): S {
    return this.#state;
  }

  to(next: S): void {
    if (!this.table[this.#state].includes(next)) throw new IllegalStateError(this.what(), this.#state, next);
    this.#state = next;
  }

  can(next: S): boolean {
    return this.table[this.#state].includes(next);
  }
}
