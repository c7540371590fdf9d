/**
 * oipControls (src/gateway/oip/infer-request.ts): a v2 request's timeout and priority read from its
 * JSON header only (never its binary tensors), across chunk seams, without a copy when neither is named.
 */
import assert from 'node:assert/strict';
import { oipControls } from '../../../src/gateway/oip/infer-request';
import { joinBody } from '../../../src/oip/binary-body';

/** `body` cut into pieces of `size` bytes, as a socket might deliver it. */
const chunks = (body: Buffer, size: number) =>
  Array.from({ length: Math.ceil(body.length / size) }, (_, i) => body.subarray(i * size, (i + 1) * size));

describe('gateway/oip/infer-request: a v2 request header', () => {
  it('reads timeout and priority from the header parameters, whatever the chunking', () => {
    const header = { inputs: [], parameters: { timeout: 250, priority: 2 } };
    const { body, headerLength } = joinBody(header, [Buffer.from('"timeout" in the tensor bytes')]);
    for (const size of [1, 3, 7, body.length])
      assert.deepEqual(oipControls(chunks(body, size), headerLength), { timeout: 250, priority: 2 }, String(size));
  });

  it('looks only within the header: a key in the binary part, a key outside parameters, or bad JSON is nothing', () => {
    const { body, headerLength } = joinBody({ inputs: [] }, [Buffer.from('{"parameters":{"timeout":1}}')]);
    assert.deepEqual(oipControls([body], headerLength), {});
    const outside = joinBody({ timeout: 5, parameters: { priority: 0 } }, []);
    assert.deepEqual(oipControls([outside.body], outside.headerLength), { timeout: undefined, priority: 0 });
    assert.deepEqual(oipControls([Buffer.from('{"timeout": ')], 12), {});
    const notObject = joinBody({ parameters: 'timeout' }, []);
    assert.deepEqual(oipControls([notObject.body], notObject.headerLength), {});
  });
});
