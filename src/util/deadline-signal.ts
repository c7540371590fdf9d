import type { Timers } from './clock';

/**
 * A signal that fires when `parent` does (with its reason), or with `reason()` once `ms` have passed
 * on `timers`: a wait bounded by a deadline of its own that the caller's abort still ends sooner.
 * `done()` clears the timer and the listener when the wait is over.
 */
export function deadlineSignal(
  parent: AbortSignal,
  ms: number,
  reason: () => Error,
  timers: Timers,
): { signal: AbortSignal; done(): void } {
  const controller = new AbortController();
  const onParent = () => controller.abort(parent.reason);
  if (parent.aborted) onParent();
  else parent.addEventListener('abort', onParent, { once: true });
  const timer = timers.setTimeout(() => controller.abort(reason()), Math.max(0, ms));
  return {
    signal: controller.signal,
    done: () => {
      timers.clearTimeout(timer);
      parent.removeEventListener('abort', onParent);
    },
  };
}
