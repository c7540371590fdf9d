/**
 * MMS's worker restart back-off (WorkerThread.BACK_OFF): Fibonacci seconds 0, 1, 1, 2, 3, 5, …,
 * capped. The attempt counter resets after a successful load.
 */
export function restartDelaySeconds(attempt: number, capSeconds: number): number {
  let a = 0;
  let b = 1;
  for (let i = 0; i < attempt; i++) [a, b] = [b, a + b];
  return Math.min(a, capSeconds);
}
