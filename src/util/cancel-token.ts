/**
 * "The client went away", as a transport tells the model. One listener and a flag: an
 * AbortController with its EventTarget costs microseconds per request on the hot path, and a job
 * needs nothing more than this.
 */
export class CancelToken {
  cancelled = false;
  #listener: (() => void) | null = null;

  cancel(): void {
    if (this.cancelled) return;
    this.cancelled = true;
    const listener = this.#listener;
    this.#listener = null;
    listener?.();
  }

  /** The one listener (the job it belongs to); called at once if already cancelled. */
  onCancel(listener: () => void): void {
    if (this.cancelled) listener();
    else this.#listener = listener;
  }
}
