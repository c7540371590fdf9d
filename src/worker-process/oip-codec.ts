/**
 * The default handler's Open Inference Protocol v2 codec (a JSON header, then binary tensors:
 * src/oip/binary-body.ts), which /v2 infer sends the worker, so raw tensors never become JSON on
 * either side (gRPC ModelInfer sends its protobuf as it came: model-infer-codec.ts). Each output goes in binary when its binary_data or the
 * request's binary_data_output says so.
 */
import { quote } from '../errors';
import { headerLengthOf, joinBody, oipContentType, sliceBinary, splitBody } from '../oip/binary-body';
import { toRaw } from '../oip/datatypes';
import type { V2InferRequest } from '../oip/types';
import type { TensorInfo } from '../model-types';
import type { HandlerRequest } from './context';
import {
  decodeV2,
  outputSelection,
  selectedOutputs,
  v2Answer,
  v2Output,
  type DecodedRequest,
  type EncodeMeta,
} from './json-codec';
import { invalidInput, type PlainTensor, type RequestBudget } from './tensor';

export interface EncodedBody {
  body: Buffer;
  contentType: string;
}

export function decodeOip(req: HandlerRequest, inputs: readonly TensorInfo[], budget: RequestBudget): DecodedRequest {
  const { header, binary } = splitBody<V2InferRequest>(req.body, headerLengthOf(req.contentType) ?? req.body.length);
  if (!Array.isArray(header.inputs))
    throw invalidInput(
      'the inference header has no "inputs" list; send {"inputs": [{"name", "shape", "datatype", "data"}]}',
    );
  const selection = outputSelection(header);
  const inBinary = header.inputs.filter((item) => item?.parameters?.binary_data_size !== undefined);
  const sizes = inBinary.map((item) => {
    const n = item.parameters!.binary_data_size;
    if (!Number.isSafeInteger(n) || n! < 0)
      throw invalidInput(
        `input ${typeof item.name === 'string' ? quote(item.name) : 'without a name'}: binary_data_size must be a byte count`,
      );
    return n!;
  });
  const pieces = sliceBinary(binary, sizes);
  return {
    format: 'v2',
    feeds: decodeV2(header.inputs, inputs, budget, new Map(inBinary.map((item, k) => [item, pieces[k]]))),
    id: typeof header.id === 'string' ? header.id : undefined,
    selection,
  };
}

export function encodeOip(outputs: Record<string, PlainTensor>, meta: EncodeMeta): EncodedBody {
  const { selection, outputs: infos } = meta;
  const binaries: Buffer[] = [];
  const tensors = selectedOutputs(outputs, selection).map(([name, t]) => {
    const binary =
      selection?.outputs?.find((o) => o.name === name)?.parameters?.binary_data ?? selection?.binaryAll ?? false;
    const tensor = v2Output(name, t, infos, !binary);
    if (binary) {
      const bytes = toRaw(t.data);
      binaries.push(bytes);
      tensor.parameters = { ...tensor.parameters, binary_data_size: bytes.length };
    }
    return tensor;
  });
  const { body, headerLength } = joinBody(v2Answer(meta, tensors), binaries);
  return { body, contentType: oipContentType(headerLength) };
}
