import assert from 'node:assert/strict';
import { shortageError } from '../src/errors';

describe('errors: shortageError', () => {
  it('maps an engine message about memory to the memory 507, and one about space to the storage 507', () => {
    for (const msg of [
      'CUDA out of memory',
      'std::bad_alloc',
      'Failed to allocate memory for requested buffer',
      'ENOMEM',
    ]) {
      const e = shortageError(msg, 'onnxruntime');
      assert.equal(e?.code, 'MME_ERR_INSUFFICIENT_MEMORY', msg);
      assert.equal(e?.status, 507);
      assert.equal(e?.message, `onnxruntime ran out of memory: ${msg}`);
    }
    for (const msg of ['write /dev/shm/x: No space left on device', 'ENOSPC: write failed', 'Disk quota exceeded']) {
      const e = shortageError(msg, 'loading the model');
      assert.equal(e?.code, 'MME_ERR_INSUFFICIENT_STORAGE', msg);
      assert.equal(e?.status, 507);
      assert.match(e?.message ?? '', /^loading the model ran out of disk or shared-memory space: /);
    }
  });

  it("takes the caller's word for memory (an allocation RangeError) unless the message names space", () => {
    assert.equal(shortageError('Invalid array length', 'the model', true)?.code, 'MME_ERR_INSUFFICIENT_MEMORY');
    assert.equal(shortageError('ENOSPC', 'the model', true)?.code, 'MME_ERR_INSUFFICIENT_STORAGE');
  });

  it('leaves every other failure to its caller', () => {
    for (const msg of ['invalid dimensions for input', 'Room 404 not found', 'boomerang', ''])
      assert.equal(shortageError(msg, 'x'), undefined, msg);
  });
});
