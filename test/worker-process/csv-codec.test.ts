import assert from 'node:assert/strict';
import { isMmeError } from '../../src/errors';
import type { TensorInfo } from '../../src/model-types';
import { decodeCsv, encodeCsv } from '../../src/worker-process/csv-codec';
import { jsonElements } from '../../src/worker-process/nested-arrays';
import { RequestBudget } from '../../src/worker-process/tensor';
import { npyFile } from './npy-fixtures';

const floats: TensorInfo = { name: 'x', type: 'float32', shape: ['batch', 4] };
const int32s: TensorInfo = { name: 'x', type: 'int32', shape: ['batch', 'n'] };

const decode = (b: Buffer, info: TensorInfo) =>
  decodeCsv(b, info, new RequestBudget(Number.MAX_SAFE_INTEGER, b.length));

function refused(body: string, info: TensorInfo, message: RegExp): void {
  assert.throws(
    () => decode(Buffer.from(body), info),
    (err: unknown) => isMmeError(err) && err.status === 400 && message.test(err.message),
  );
}

describe('text/csv codec', () => {
  it('reads rows as np.savetxt writes them into a [rows, columns] tensor of the input type', () => {
    const t = decode(npyFile('mlp-rows.csv'), floats);
    assert.deepEqual([t.type, t.dims, jsonElements(t)], ['float32', [2, 4], [1, 2, 3, 4, -1, 0.5, 0, 2]]);
    const ints = decode(npyFile('int32.csv'), int32s);
    assert.deepEqual([ints.type, jsonElements(ints)], ['int32', [-2147483648, 7, 2147483647]]);
  });

  it('writes integers byte for byte as np.savetxt(fmt="%d") does', () => {
    assert.equal(encodeCsv(decode(npyFile('int32.csv'), int32s)), npyFile('int32.csv').toString());
  });

  it("accepts CRLF, blank lines, spaces, quotes and NumPy's nan / inf", () => {
    const t = decode(Buffer.from('1, "2" ,nan,-inf\r\n\r\n5,6,Infinity,8\r\n'), floats);
    assert.deepEqual(jsonElements(t), [1, 2, NaN, -Infinity, 5, 6, Infinity, 8]);
  });

  it('keeps int64 values beyond 2^53 exact', () => {
    const t = decode(Buffer.from('9007199254740993,-1\n'), { name: 'x', type: 'int64', shape: ['b', 2] });
    assert.deepEqual(jsonElements(t), ['9007199254740993', -1]);
    assert.equal(encodeCsv(t), '9007199254740993,-1\n');
  });

  it('writes one line per row of the first axis, quoting strings only when needed', () => {
    assert.equal(encodeCsv({ type: 'float32', dims: [3], data: Float32Array.of(1, 0.5, -2) }), '1\n0.5\n-2\n');
    assert.equal(
      encodeCsv({ type: 'int32', dims: [2, 2, 2], data: Int32Array.of(1, 2, 3, 4, 5, 6, 7, 8) }),
      '1,2,3,4\n5,6,7,8\n',
    );
    assert.equal(encodeCsv({ type: 'float32', dims: [], data: Float32Array.of(2.5) }), '2.5\n');
    assert.equal(encodeCsv({ type: 'string', dims: [1, 2], data: ['a,b', 'say "hi"'] }), '"a,b","say ""hi"""\n');
  });

  it('refuses ragged rows, non-numbers, empty bodies and the wrong number of columns, saying where', () => {
    refused('1,2,3,4\n1,2\n', floats, /has 2 values on row 2 but 4 on row 1/);
    refused('1,2,x,4\n', floats, /has "x" at row 1, column 3, which is not a number/);
    refused('\n\n', floats, /has no rows/);
    refused('1,2,3\n', floats, /input x has shape \[1, 3\] but the model expects \[batch, 4\]/);
    refused('1.5,2\n', int32s, /expects integers/);
  });
});
