/**
 * Admission's tallies computed the simple way, by a pass over every entry: what admission.test
 * feeds admission, and the reference the registry's kept tallies are checked against. `settle`:
 * what nextSettle gives while a load or a leaving entry is under way (the test settles it).
 */
import type { Resident, Tally } from '../../../src/server/cache/admission';

export function scanTally<Entry extends Resident>(
  entries: () => Iterable<Entry>,
  settle: () => Promise<void> = () => new Promise<void>(() => {}),
): Tally<Entry> {
  const sum = (keep: (e: Entry) => boolean, of: (e: Entry) => number) => {
    let n = 0;
    for (const e of entries()) if (keep(e)) n += of(e);
    return n;
  };
  const counted = (e: Entry) => e.countsAsLoaded;
  return {
    has: (entry) => [...entries()].includes(entry),
    get heldBytes() {
      return sum(
        () => true,
        (e) => e.heldBytes,
      );
    },
    get heldBytesNotReady() {
      return sum(
        (e) => e.phase !== 'ready',
        (e) => e.heldBytes,
      );
    },
    get counted() {
      return sum(counted, () => 1);
    },
    get countedNotReady() {
      return sum(
        (e) => e.phase !== 'ready' && counted(e),
        () => 1,
      );
    },
    get heldBytesFailed() {
      return sum(
        (e) => e.phase === 'failed',
        (e) => e.heldBytes,
      );
    },
    get countedFailed() {
      return sum(
        (e) => e.phase === 'failed',
        () => 1,
      );
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
