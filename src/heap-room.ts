/**
 * The server's V8 heap keeps room above its live size between full collections: its small live heap
 * (~12 MB) left V8 so little room that the Buffers of .npy bodies cost a mark-compact every ~50 ms, a
 * seventh of its time; with room, one in 2 s instead of 40 (bench-results/part21-data-plane/README.md,
 * "Heap room"). Bounded in bytes: once the live heap reaches it, V8's own growing factor applies.
 */
import { constants, PerformanceObserver } from 'node:perf_hooks';
import v8 from 'node:v8';

/** Room kept above the live heap while the live heap is smaller than it. */
export const kHeapRoomBytes = 64 * 2 ** 20;

/**
 * V8's `--heap-growing-percent` that sets the next limit at least kHeapRoomBytes above `liveBytes`,
 * or 0 (V8's own factor) once the live heap is as large as the room.
 */
export function growingPercent(liveBytes: number): number {
  if (liveBytes >= kHeapRoomBytes) return 0;
  // Below 1 MiB the heap has not started yet: the factor would be absurd and the limit V8's anyway.
  // Steps of 50 so that a live heap moving by a few KB between collections leaves the flag alone.
  return Math.ceil((100 * kHeapRoomBytes) / Math.max(liveBytes, 2 ** 20) / 50) * 50;
}

/** Sets the growing percent now and after every full collection (the next one's limit uses it). */
export function keepHeapRoom(): void {
  let applied = -1;
  const apply = () => {
    const percent = growingPercent(v8.getHeapStatistics().used_heap_size);
    if (percent === applied) return;
    v8.setFlagsFromString(`--heap-growing-percent=${percent}`);
    applied = percent;
  };
  apply();
  const observer = new PerformanceObserver((list) => {
    if (list.getEntries().some((e) => (e as { detail?: { kind?: number } }).detail?.kind === kMajor)) apply();
  });
  observer.observe({ entryTypes: ['gc'] });
}

const kMajor = constants.NODE_PERFORMANCE_GC_MAJOR;
