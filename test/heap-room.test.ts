import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { growingPercent, kHeapRoomBytes } from '../src/heap-room';

const MiB = 2 ** 20;

describe('heap room: the growing percent that keeps kHeapRoomBytes above the live heap', () => {
  it('sets the next limit at least the room above a small live heap, in steps of 50', () => {
    for (const live of [1, 5, 12, 12.4, 30, 63].map((m) => m * MiB)) {
      const percent = growingPercent(live);
      assert.equal(percent % 50, 0);
      assert.ok(live * (percent / 100) >= kHeapRoomBytes, `${live / MiB} MiB live: ${percent} %`);
      assert.ok(live * ((percent - 50) / 100) < kHeapRoomBytes, `${live / MiB} MiB live: no more than one step over`);
    }
  });

  it("leaves V8's own factor (0) once the live heap is as large as the room", () => {
    assert.equal(growingPercent(kHeapRoomBytes), 0);
    assert.equal(growingPercent(10 * kHeapRoomBytes), 0);
  });

  it('treats a heap below 1 MiB as 1 MiB', () => {
    assert.equal(growingPercent(0), growingPercent(MiB));
  });

  it("in a real process: applies the percent at start and V8's own factor after a full collection finds more live heap than the room", () => {
    // The flag V8 is given is recorded on its way in; what V8 then does with it is V8's (the bench measures that).
    const script = `
      const v8 = require('node:v8');
      const given = [];
      const set = v8.setFlagsFromString;
      v8.setFlagsFromString = (f) => { given.push(f); set(f); };
      const { keepHeapRoom } = require(${JSON.stringify(path.resolve(__dirname, '../src/heap-room'))});
      keepHeapRoom();
      const atStart = given.slice();
      globalThis.kept = Array.from({ length: 1_500_000 }, (_, i) => ({ i, s: 'model-' + i }));
      gc();
      // The collection's entry reaches observers on a later turn: wait for it, turn by turn.
      const done = (turns) => given.length > atStart.length || turns === 0
        ? console.log(JSON.stringify({ atStart, after: given.slice(atStart.length) }))
        : setImmediate(() => done(turns - 1));
      done(100_000);
    `;
    const out = JSON.parse(execFileSync(process.execPath, ['--expose-gc', '-e', script], { encoding: 'utf8' }));
    assert.equal(out.atStart.length, 1);
    assert.match(out.atStart[0], /^--heap-growing-percent=[1-9]\d*$/);
    assert.deepEqual(out.after, ['--heap-growing-percent=0']);
  });
});
