/**
 * The in-process batcher of the batching row's limit (scripts/bench/kit/in-process-batcher.ts):
 * requests' inputs stacked along axis 0, one run's outputs split back to each request by its rows.
 */
import assert from 'node:assert/strict';
import { splitOutputs, stackFeeds } from '../../../scripts/bench/kit/in-process-batcher';
import { Tensor } from '../../../src/worker-process/tensor';

const f32 = (dims: number[], values: number[]) => Tensor.of({ type: 'float32', dims, data: Float32Array.from(values) });
const i64 = (dims: number[], values: number[]) =>
  Tensor.of({ type: 'int64', dims, data: BigInt64Array.from(values.map(BigInt)) });
const plain = (t: Tensor) => ({ type: t.type, dims: [...t.dims], data: Array.from(t.data as ArrayLike<unknown>) });

describe('scripts/bench/kit/in-process-batcher: stacking and splitting a batch', () => {
  const requests = [
    { x: f32([1, 3], [1, 2, 3]), ids: i64([1, 2], [10, 11]) },
    { x: f32([2, 3], [4, 5, 6, 7, 8, 9]), ids: i64([2, 2], [12, 13, 14, 15]) },
    { x: f32([1, 3], [0, -1, -2]), ids: i64([1, 2], [16, 17]) },
  ];

  it("stacks each input along axis 0 in the requests' order, and says how many rows each brought", () => {
    const { feeds, rows } = stackFeeds(requests, ['x', 'ids']);
    assert.deepEqual(rows, [1, 2, 1]);
    assert.deepEqual(plain(feeds.x), {
      type: 'float32',
      dims: [4, 3],
      data: [1, 2, 3, 4, 5, 6, 7, 8, 9, 0, -1, -2],
    });
    assert.deepEqual(plain(feeds.ids), {
      type: 'int64',
      dims: [4, 2],
      data: [10n, 11n, 12n, 13n, 14n, 15n, 16n, 17n],
    });
  });

  it('splits every output back by those rows, each request its own rows of each', () => {
    const outputs = {
      y: { type: 'float32', dims: [4, 2], data: Float32Array.from([1, 1, 2, 2, 3, 3, 4, 4]) },
      label: { type: 'int64', dims: [4], data: BigInt64Array.from([7n, 8n, 9n, 10n]) },
    };
    const answers = splitOutputs(outputs, [1, 2, 1]);
    assert.deepEqual(
      answers.map((a) => ({ y: plain(a.y), label: plain(a.label) })),
      [
        { y: { type: 'float32', dims: [1, 2], data: [1, 1] }, label: { type: 'int64', dims: [1], data: [7n] } },
        {
          y: { type: 'float32', dims: [2, 2], data: [2, 2, 3, 3] },
          label: { type: 'int64', dims: [2], data: [8n, 9n] },
        },
        { y: { type: 'float32', dims: [1, 2], data: [4, 4] }, label: { type: 'int64', dims: [1], data: [10n] } },
      ],
    );
  });

  it('gives back what it stacked when the outputs are the inputs', () => {
    const { feeds, rows } = stackFeeds(requests, ['x', 'ids']);
    const answers = splitOutputs(feeds, rows);
    assert.deepEqual(
      answers.map((a) => ({ x: plain(a.x), ids: plain(a.ids) })),
      requests.map((r) => ({ x: plain(r.x), ids: plain(r.ids) })),
    );
  });

  it('refuses to stack requests whose rows differ in shape, and outputs whose rows do not add up', () => {
    assert.throws(() => stackFeeds([requests[0], { x: f32([1, 2], [1, 2]), ids: requests[0].ids }], ['x', 'ids']), {
      message: /does not join float32 \[1, 3\] along axis 0/,
    });
    assert.throws(() => splitOutputs({ y: f32([3, 1], [1, 2, 3]) }, [1, 1]), { message: /2 pieces of 2 rows/ });
  });
});
