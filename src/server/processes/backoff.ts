/**
 * MMS's worker restart back-off (WorkerThread.BACK_OFF): Fibonacci seconds 0, 1, 1, 2, 3, 5, …,
 * capped. The attempt counter resets after a successful load.
 */
export const kBackoffCapSeconds = 60;
/**
 * A restart has worked once what it started (a worker that loaded its model, a shared host that
 * started) has stayed up this long: one that dies sooner is a crash loop, and backs off like one
 * that cannot start at all.
 */
export const kStableMs = 10_000;

export function restartDelaySeconds(attempt: number, capSeconds: number): number {
  let a = 0;
  let b = 1;
  for (let i = 0; i < attempt; i++) [a, b] = [b, a + b];
  return Math.min(a, capSeconds);
}
