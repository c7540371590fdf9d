/**
 * lenientDecoding (src/grpc/lenient-decoding.ts) on the two real service definitions: a request
 * that decodes reaches the handler as grpc-js would decode it; one that does not, or that sizes a
 * repeated field past its limit, reaches it as a marker that decoded() turns into the client's
 * INVALID_ARGUMENT (MME_ERR_INVALID_INPUT), where grpc-js alone would answer INTERNAL.
 */
import assert from 'node:assert/strict';
import type { MethodDefinition } from '@grpc/grpc-js';
import { decoded, lenientDecoding } from '../../src/grpc/lenient-decoding';
import { serviceDefinitions } from '../../src/grpc/protos';
import { isMmeError } from '../../src/errors';
import { field, text } from '../helpers/protobuf-wire';

type Methods = Record<string, MethodDefinition<unknown, unknown>>;

const kserve = serviceDefinitions().kserve.service as unknown as Methods;
const torchserve = serviceDefinitions().torchserve.service as unknown as Methods;
const lenientKserve = lenientDecoding(kserve) as unknown as Methods;
const lenientTorchserve = lenientDecoding(torchserve) as unknown as Methods;

/** Field 1, a string whose length varint never ends: protobuf no decoder reads. */
const kUndecodable = Buffer.from([0x0a, 0xff]);

/** decoded(message) throws the client's INVALID_ARGUMENT with a message matching `message`. */
function refused(message: unknown, pattern: RegExp): void {
  assert.throws(
    () => decoded(message),
    (err: unknown) => isMmeError(err) && err.code === 'MME_ERR_INVALID_INPUT' && pattern.test(err.message),
  );
}

describe('grpc/lenient-decoding: undecodable and oversized requests reach the handler as the client’s mistake', () => {
  it('keeps every method of both services, with its path and serializers; only the request decoder changes', () => {
    for (const [plain, lenient] of [
      [kserve, lenientKserve],
      [torchserve, lenientTorchserve],
    ]) {
      assert.deepEqual(Object.keys(lenient), Object.keys(plain));
      for (const [name, method] of Object.entries(plain)) {
        const { requestDeserialize: _a, ...rest } = method;
        const { requestDeserialize: _b, ...lenientRest } = lenient[name];
        assert.deepEqual(lenientRest, rest, name);
        assert.notEqual(lenient[name].requestDeserialize, method.requestDeserialize, name);
      }
    }
  });

  it('decodes a valid request exactly as grpc-js does, and decoded() passes it through', () => {
    const request = { model_name: 'm', id: 'r1', inputs: [{ name: 'x', datatype: 'FP32', shape: ['1', '2'] }] };
    const bytes = kserve.ModelInfer.requestSerialize(request);
    const message = lenientKserve.ModelInfer.requestDeserialize(bytes);
    assert.deepEqual(message, kserve.ModelInfer.requestDeserialize(bytes));
    assert.equal(decoded(message), message);
    assert.equal((message as { model_name: string }).model_name, 'm');
  });

  it('turns bytes that are not protobuf into INVALID_ARGUMENT naming the method, on every method, never a throw inside grpc-js', () => {
    for (const [plain, lenient] of [
      [kserve, lenientKserve],
      [torchserve, lenientTorchserve],
    ]) {
      for (const [name, method] of Object.entries(lenient)) {
        assert.throws(() => plain[name].requestDeserialize(kUndecodable), Error, `grpc-js alone decodes ${name}`);
        const message = method.requestDeserialize(kUndecodable);
        refused(
          message,
          new RegExp(
            `^The request message is not a valid protobuf message for ${method.path.replace(/\./g, '\\.')} \\(.+\\); encode it with that method's request type from the \\.proto files\\.$`,
          ),
        );
      }
    }
  });

  it('refuses before decoding a ModelInferRequest or PredictionsRequest that sizes a repeated field past its limit', () => {
    const inferWith = (n: number) =>
      Buffer.concat([text(1, 'm'), ...Array.from({ length: n }, () => field(5, Buffer.alloc(0)))]);
    refused(
      lenientKserve.ModelInfer.requestDeserialize(inferWith(1025)),
      /^Refused before decoding: .*more than 1024 inputs.*\.$/,
    );
    const atLimit = lenientKserve.ModelInfer.requestDeserialize(inferWith(1024)) as { inputs: unknown[] };
    assert.equal(decoded(atLimit).inputs.length, 1024, 'the limit itself is allowed');
    // PredictionsRequest's input map: 1025 entries.
    const entry = field(3, Buffer.concat([text(1, 'k'), field(2, Buffer.from('v'))]));
    const predictions = Buffer.concat([text(1, 'm'), ...Array<Buffer>(1025).fill(entry)]);
    refused(lenientTorchserve.Predictions.requestDeserialize(predictions), /^Refused before decoding: .*1024/);
  });
});
