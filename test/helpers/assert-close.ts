import assert from 'node:assert/strict';

/** Rows of model output equal to the reference within float32 rounding. */
export function assertRowsClose(actual: number[][], expected: number[][], what: string): void {
  assert.equal(actual.length, expected.length, `${what}: ${actual.length} rows, expected ${expected.length}`);
  actual.forEach((row, i) => row.forEach((v, j) => assert.ok(Math.abs(v - expected[i][j]) < 1e-4, `${what} [${i}][${j}]: ${v} vs ${expected[i][j]}`)));
}
