import assert from 'node:assert/strict';

/**
 * `actual` holds exactly as many values as the reference, each a number within `tolerance` of it: a
 * truncated or padded answer fails, as does one with a string or null where a number belongs.
 */
export function assertValuesClose(
  actual: unknown,
  expected: ArrayLike<number>,
  what = 'output',
  tolerance = 1e-4,
): void {
  assert.ok(
    Array.isArray(actual) || ArrayBuffer.isView(actual),
    `${what}: not a list of values: ${String(JSON.stringify(actual)).slice(0, 100)}`,
  );
  const values = actual as ArrayLike<unknown>;
  assert.equal(values.length, expected.length, `${what}: ${values.length} values, expected ${expected.length}`);
  for (let j = 0; j < expected.length; j++) {
    const v = values[j];
    assert.ok(
      typeof v === 'number' && Math.abs(v - expected[j]) <= tolerance,
      `${what}[${j}]: ${String(v)} vs ${expected[j]}`,
    );
  }
}

/** Rows of model output equal to the reference within `tolerance` (float32 rounding by default): as many rows, each as wide. */
export function assertRowsClose(
  actual: unknown,
  expected: ReadonlyArray<ArrayLike<number>>,
  what = 'output',
  tolerance = 1e-4,
): void {
  assert.ok(Array.isArray(actual), `${what}: not a list of rows: ${String(JSON.stringify(actual)).slice(0, 100)}`);
  assert.equal(actual.length, expected.length, `${what}: ${actual.length} rows, expected ${expected.length}`);
  expected.forEach((row, i) => assertValuesClose(actual[i], row, `${what} row ${i}`, tolerance));
}

/**
 * JSON values equal in structure and in every string and boolean, with each number within `tolerance`
 * of the expected one (relative beyond 1): what a CPU whose kernels round differently still prints.
 */
export function assertJsonClose(actual: unknown, expected: unknown, what = 'value', tolerance = 1e-6): void {
  if (typeof expected === 'number') {
    assert.ok(
      typeof actual === 'number' && Math.abs(actual - expected) <= tolerance * Math.max(1, Math.abs(expected)),
      `${what}: ${String(actual)} vs ${expected}`,
    );
  } else if (Array.isArray(expected)) {
    assert.ok(
      Array.isArray(actual) && actual.length === expected.length,
      `${what}: ${String(JSON.stringify(actual)).slice(0, 100)}, expected ${expected.length} elements`,
    );
    expected.forEach((e, i) => assertJsonClose(actual[i], e, `${what}[${i}]`, tolerance));
  } else if (expected !== null && typeof expected === 'object') {
    assert.ok(
      actual !== null && typeof actual === 'object' && !Array.isArray(actual),
      `${what}: ${String(JSON.stringify(actual)).slice(0, 100)}, expected an object`,
    );
    const got = actual as Record<string, unknown>;
    assert.deepEqual(Object.keys(got).sort(), Object.keys(expected).sort(), `${what}: keys`);
    for (const [k, e] of Object.entries(expected)) assertJsonClose(got[k], e, `${what}.${k}`, tolerance);
  } else {
    assert.equal(actual, expected, what);
  }
}
