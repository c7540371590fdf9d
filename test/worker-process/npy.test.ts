import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { isMmeError } from '../../src/errors';
import { parseNpy, writeNpy } from '../../src/worker-process/npy';
import { jsonElements } from '../../src/worker-process/nested-arrays';
import { RequestBudget } from '../../src/worker-process/tensor';
import { NPY_DIR, npyFile } from './npy-fixtures';

/** The reader with no element limit but the body's own. */
const parse = (b: Buffer) => parseNpy(b, new RequestBudget(Number.MAX_SAFE_INTEGER, b.length));

function refused(bytes: Buffer, message: RegExp): void {
  assert.throws(
    () => parse(bytes),
    (err: unknown) => isMmeError(err) && err.code === 'MME_ERR_INVALID_INPUT' && message.test(err.message),
  );
}

describe('.npy reader and writer, against files NumPy wrote', () => {
  it('reads dtype, shape and values', () => {
    const f32 = parse(npyFile('float32.npy'));
    assert.deepEqual([f32.type, f32.dims, jsonElements(f32)], ['float32', [2, 3], [1.5, -2, 3, 4, 5.25, -6]]);
    const i64 = parse(npyFile('int64.npy'));
    assert.deepEqual(jsonElements(i64), ['9007199254740993', -1, '-9223372036854775808', 42]);
    const str = parse(npyFile('string.npy'));
    assert.deepEqual([str.type, str.data], ['string', ['a', 'héllo', '日本', '']]);
    const bool = parse(npyFile('bool.npy'));
    assert.deepEqual([bool.type, jsonElements(bool)], ['bool', [true, false, true]]);
    const half = parse(npyFile('float16.npy'));
    assert.deepEqual(jsonElements(half), [0.5, -1, 65504, 0.3330078125]);
    assert.deepEqual(parse(npyFile('float32-scalar.npy')).dims, []);
    assert.deepEqual(parse(npyFile('float32-empty.npy')).dims, [0, 3]);
  });

  it('views aligned little-endian data in the body itself, and copies data off its element boundary or big-endian', () => {
    const file = npyFile('float32.npy');
    const aligned = Buffer.from(file);
    const viewed = parse(aligned);
    assert.equal((viewed.data as Float32Array).buffer, aligned.buffer);
    const shifted = Buffer.alloc(file.length + 1);
    file.copy(shifted, 1);
    const copied = parse(shifted.subarray(1));
    assert.notEqual((copied.data as Float32Array).buffer, shifted.buffer);
    assert.equal((copied.data as Float32Array).byteOffset % 4, 0);
    const big = parse(npyFile('float32-big-endian.npy'));
    assert.deepEqual(
      [jsonElements(viewed), jsonElements(copied), jsonElements(big)],
      Array(3).fill([1.5, -2, 3, 4, 5.25, -6]),
    );
  });

  it('puts Fortran-ordered data in C order', () => {
    const t = parse(npyFile('float32-fortran-3d.npy'));
    assert.deepEqual(t.dims, [2, 3, 4]);
    assert.deepEqual(
      jsonElements(t),
      Array.from({ length: 24 }, (_, i) => i),
    );
  });

  it('reads big-endian data and version 2.0 headers as the same array', () => {
    const expected = jsonElements(parse(npyFile('float32.npy')));
    for (const name of ['float32-big-endian.npy', 'float32-fortran.npy', 'float32-version2.npy']) {
      const t = parse(npyFile(name));
      assert.deepEqual([t.type, t.dims, jsonElements(t)], ['float32', [2, 3], expected], name);
    }
  });

  it('writes exactly the bytes np.save writes, header padding included', () => {
    const names = readdirSync(NPY_DIR).filter((n) => n.endsWith('.npy') && !/fortran|big-endian|version2|mlp/.test(n));
    assert.ok(names.length >= 15);
    for (const name of names) assert.deepEqual(writeNpy(parse(npyFile(name))), npyFile(name), name);
  });

  it('refuses what is not a plain .npy array, saying why', () => {
    const good = npyFile('float32.npy');
    refused(Buffer.from('{"inputs": []}'), /does not start with the \.npy magic/);
    refused(
      good.subarray(0, good.length - 4),
      /has 20 bytes of '<f4' data, but its shape \[2, 3\] needs 6 elements of 4 bytes \(24\)/,
    );
    refused(good.subarray(0, 40), /truncated inside its header/);
    const withDescr = (descr: string) => Buffer.from(good.toString('latin1').replace("'<f4'", descr), 'latin1');
    refused(withDescr("'|O8'"), /dtype '\|O8'; supported: b1, i1/);
    refused(withDescr("'<c8'"), /dtype '<c8'/);
    refused(withDescr("[('a','<f4')]"), /structured dtypes are not supported/);
  });
});
