import assert from 'node:assert/strict';
import { fromHalf, toHalf } from '../../src/worker-process/float16';

/** IEEE 754 binary16 bit patterns and the numbers they stand for exactly. */
const kExact: Array<[number, number]> = [
  [0x0000, 0],
  [0x3c00, 1],
  [0xbc00, -1],
  [0x4000, 2],
  [0x3800, 0.5],
  [0x3555, 0.333251953125],
  [0x7bff, 65504],
  [0xfbff, -65504],
  [0x0400, 2 ** -14],
  [0x03ff, 1023 * 2 ** -24],
  [0x0001, 2 ** -24],
  [0x8001, -(2 ** -24)],
  [0x7c00, Infinity],
  [0xfc00, -Infinity],
];

describe('float16: IEEE 754 half precision bits', () => {
  it('reads and writes the known bit patterns of normals, subnormals and infinities', () => {
    for (const [bits, value] of kExact) {
      assert.equal(toHalf(value), bits, `toHalf(${value})`);
      assert.equal(fromHalf(bits), value, `fromHalf(0x${bits.toString(16)})`);
    }
  });

  it('keeps the sign of zero and maps NaN to a quiet NaN', () => {
    assert.equal(toHalf(-0), 0x8000);
    assert.ok(Object.is(fromHalf(0x8000), -0));
    assert.equal(toHalf(NaN), 0x7e00);
    assert.ok(Number.isNaN(fromHalf(0x7e00)));
    assert.ok(Number.isNaN(fromHalf(0xfc01)));
  });

  it('rounds to nearest, ties to even', () => {
    // Between 1 (0x3c00) and 1 + 2^-10 (0x3c01): half way goes to the even 0x3c00, past half way up.
    assert.equal(toHalf(1 + 2 ** -11), 0x3c00);
    assert.equal(toHalf(1 + 3 * 2 ** -11), 0x3c02, 'a tie between 0x3c01 and 0x3c02 goes to the even one');
    assert.equal(toHalf(1 + 2 ** -11 + 2 ** -20), 0x3c01);
    assert.equal(toHalf(1 + 2 ** -12), 0x3c00);
    // A tie among subnormals: 1.5 * 2^-24 lies between 0x0001 and 0x0002.
    assert.equal(toHalf(1.5 * 2 ** -24), 0x0002);
    assert.equal(toHalf(2.5 * 2 ** -24), 0x0002);
    assert.equal(toHalf(0.75 * 2 ** -24), 0x0001);
    // Rounding up out of the subnormals and out of the largest binade.
    assert.equal(toHalf(2 ** -14 - 2 ** -26), 0x0400);
    assert.equal(toHalf(65519), 0x7bff);
    assert.equal(toHalf(65520), 0x7c00);
  });

  it('flushes what is too small to zero and what is too large to infinity, keeping the sign', () => {
    assert.equal(toHalf(2 ** -26), 0x0000);
    assert.equal(toHalf(-(2 ** -26)), 0x8000);
    assert.equal(toHalf(1e6), 0x7c00);
    assert.equal(toHalf(-1e6), 0xfc00);
  });

  it('round-trips every finite half', () => {
    for (let bits = 0; bits < 0x10000; bits++) {
      if ((bits & 0x7c00) === 0x7c00) continue;
      const back = toHalf(fromHalf(bits));
      assert.equal(back, bits, `0x${bits.toString(16)}`);
    }
  });
});
