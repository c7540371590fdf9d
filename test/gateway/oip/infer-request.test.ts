/**
 * oipControls and oipAnswer (src/gateway/oip/infer-request.ts): a v2 request's timeout and
 * priority read from its JSON header only (never its binary tensors), across chunk seams, without
 * a copy when neither is named; and a v2 answer taken apart, or a model error.
 */
import assert from 'node:assert/strict';
import { oipAnswer, oipControls } from '../../../src/gateway/oip/infer-request';
import { joinBody, oipContentType } from '../../../src/oip/binary-body';
import { throwsMme } from '../../helpers/throws-mme';

/** `body` cut into pieces of `size` bytes, as a socket might deliver it. */
const chunks = (body: Buffer, size: number) =>
  Array.from({ length: Math.ceil(body.length / size) }, (_, i) => body.subarray(i * size, (i + 1) * size));

describe('gateway/oip/infer-request: a v2 request header and answer', () => {
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

  it('takes an answer apart by its header size, and refuses one without an outputs list as the model error', () => {
    const { body, headerLength } = joinBody({ model_name: 'm', outputs: [{ name: 'y' }] }, [Buffer.from([1, 2])]);
    const answer = oipAnswer('m', { status: 200, contentType: oipContentType(headerLength), headers: {}, body });
    assert.deepEqual(answer.header.outputs, [{ name: 'y' }]);
    assert.deepEqual([...answer.binary], [1, 2]);
    for (const bad of [Buffer.from('{"outputs": {}}'), Buffer.from('not json')])
      throwsMme(
        () => oipAnswer('m', { status: 200, contentType: 'application/json', headers: {}, body: bad }),
        'MME_ERR_MODEL_ERROR',
        /^Model m answered without an OIP v2 "outputs" list/,
      );
  });
});
