/**
 * Admission's tallies computed the simple way, by a pass over every entry: what admission.test
 * feeds admission, and the reference the registry's kept tallies are checked against. `settle`:
 * what nextSettle gives while a load or a leaving entry is under way (the test settles it).
 */
import type { Holders, Resident, Tally } from '../../../src/server/cache/admission';

export function scanTally<Entry extends Resident>(
  entries: () => Iterable<Entry>,
  settle: () => Promise<void> = () => new Promise<void>(() => {}),
): Tally<Entry> {
  const holds: Record<Holders, (e: Entry) => boolean> = {
    all: () => true,
    notReady: (e) => e.phase !== 'ready',
    failed: (e) => e.phase === 'failed',
  };
  return {
    has: (entry) => [...entries()].includes(entry),
    held: (holders) => {
      let [bytes, count] = [0, 0];
      for (const e of entries()) {
        if (!holds[holders](e)) continue;
        bytes += e.heldBytes;
        if (e.countsAsLoaded) count++;
      }
      return { bytes, count };
    },
    nextSettle: () => {
      for (const e of entries())
        if ((e.phase === 'loading' && e.countsAsLoaded) || e.phase === 'draining' || e.phase === 'stopping')
          return settle();
      return null;
    },
    get moving() {
      return [...entries()].filter((e) => e.serving && e.model?.memoryMoves === true);
    },
  };
}
