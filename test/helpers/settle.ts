/**
 * Lets what a step set off run to its end while no time passes: ten turns of the event loop
 * (setImmediate), enough for a frame to reach a fake process and for the manager's promise chains that
 * follow it, with the virtual clock standing still. What waits on another process uses waitFor instead.
 */
export async function settle(): Promise<void> {
  for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
}
