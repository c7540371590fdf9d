/**
 * Admission's tallies computed the simple way, by a pass over every entry: what admission.test
 * feeds admission, and the reference the registry's kept tallies are checked against.
 */
import type { Resident, Tally } from '../../../src/server/cache/admission';

export function scanTally<Entry extends Resident>(entries: () => Iterable<Entry>): Tally<Entry> {
  const sum = (keep: (e: Entry) => boolean, of: (e: Entry) => number) => {
    let n = 0;
    for (const e of entries()) if (keep(e)) n += of(e);
    return n;
  };
  const counted = (e: Entry) => e.serving || e.phase === 'loading';
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
    get moving() {
      return [...entries()].filter((e) => e.serving && e.model?.memoryMoves === true);
    },
  };
}
