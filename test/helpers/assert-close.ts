import assert from 'node:assert/strict';

/**
 * `actual` holds exactly as many values as the reference, each a number within `tolerance` of it: a
 * truncated or padded answer fails, as does one with a string or null where a number belongs.
 */
export function assertValuesClose(actual: unknown, expected: ArrayLike<number>, what = 'output', tolerance = 1e-4): void {
  assert.ok(Array.isArray(actual) || ArrayBuffer.isView(actual), `${what}: not a list of values: ${String(JSON.stringify(actual)).slice(0, 100)}`);
  const values = actual as ArrayLike<unknown>;
  assert.equal(values.length, expected.length, `${what}: ${values.length} values, expected ${expected.length}`);
  for (let j = 0; j < expected.length; j++) {
    const v = values[j];
    assert.ok(typeof v === 'number' && Math.abs(v - expected[j]!) <= tolerance, `${what}[${j}]: ${String(v)} vs ${expected[j]}`);
  }
}

/** Rows of model output equal to the reference within `tolerance` (float32 rounding by default): as many rows, each as wide. */
export function assertRowsClose(actual: unknown, expected: ReadonlyArray<ArrayLike<number>>, what = 'output', tolerance = 1e-4): void {
  assert.ok(Array.isArray(actual), `${what}: not a list of rows: ${String(JSON.stringify(actual)).slice(0, 100)}`);
  assert.equal(actual.length, expected.length, `${what}: ${actual.length} rows, expected ${expected.length}`);
  expected.forEach((row, i) => assertValuesClose(actual[i], row, `${what} row ${i}`, tolerance));
}
