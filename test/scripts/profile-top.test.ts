import assert from 'node:assert/strict';
import { topFrames } from '../../scripts/profile-top';

describe('profile-top', () => {
  it('ranks frames by self time, with their share of the sampled time', () => {
    const frame = (functionName: string, line: number) => ({
      functionName,
      url: 'file:///x/dist/src/a.js',
      lineNumber: line,
    });
    const r = topFrames(
      {
        nodes: [
          { id: 1, callFrame: frame('(idle)', -1) },
          { id: 2, callFrame: frame('encode', 9) },
          { id: 3, callFrame: frame('', 3) },
        ],
        samples: [2, 2, 1, 3, 2],
        timeDeltas: [1000, 1000, 2000, 1000, 1000],
      },
      2,
    );
    assert.equal(r.totalMs, 6);
    assert.deepEqual(r.frames, [
      { frame: 'encode src/a.js:10', share: 0.5 },
      { frame: '(idle) src/a.js:0', share: 2 / 6 },
    ]);
  });
});
