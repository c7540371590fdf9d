/**
 * The default handler's codecs: by Content-Type (else 415) for a request, by Accept (else 406) for
 * its answer. CSV and .npy carry one array: single-input models, single-output answers.
 */
import { MmeError, quote } from '../errors';
import type { TensorInfo } from '../model-types';
import type { HandlerRequest } from './context';
import { classifierCsvColumns, notAcceptable } from './classifier-answers';
import { decodeCsv, encodeCsv } from './csv-codec';
import { checkShape, decodeJson, encodeJson, onlyInput, type DecodedRequest, type EncodeMeta } from './json-codec';
import { essence, isJson, negotiate } from './media-types';
import { parseNpy, writeNpy } from './npy';
import { OIP_MEDIA_TYPE } from '../oip/binary-body';
import { decodeOip, encodeOip, type EncodedBody } from './oip-codec';
import { decodeModelInfer, encodeModelInfer } from './model-infer-codec';
import { MODEL_INFER_MEDIA_TYPE } from '../protocol/messages';
import { castTo } from './nested-arrays';
import { Tensor, type PlainTensor, type RequestBudget } from './tensor';

interface Codec {
  mediaType: string;
  decode(req: HandlerRequest, inputs: readonly TensorInfo[], budget: RequestBudget): DecodedRequest;
  /** A body, or a body with a content type of its own (when it carries parameters). */
  encode(outputs: Record<string, PlainTensor>, meta: EncodeMeta): string | Buffer | EncodedBody;
}

const json: Codec = {
  mediaType: 'application/json',
  decode: (req, inputs, budget) => decodeJson(req.data !== undefined ? req.data : parseJson(req.body), inputs, budget),
  encode: encodeJson,
};

const csv: Codec = {
  mediaType: 'text/csv',
  decode: (req, inputs, budget) => single(inputs, 'text/csv', (info) => decodeCsv(req.body, info, budget)),
  encode: (outputs, meta) =>
    encodeCsv(classifierCsvColumns(outputs, meta.outputs, meta.accept) ?? onlyOutput(outputs, 'text/csv')),
};

const npy: Codec = {
  mediaType: 'application/x-npy',
  decode: (req, inputs, budget) =>
    single(inputs, 'application/x-npy', (info) => {
      const t = castTo(parseNpy(req.body, budget), info.type, `input ${info.name}`);
      checkShape(info, t.dims);
      return t;
    }),
  encode: (outputs) => writeNpy(onlyOutput(outputs, 'application/x-npy')),
};

/** Open Inference Protocol v2, JSON header plus binary tensors (what /v2 and gRPC send). */
const oip: Codec = {
  mediaType: OIP_MEDIA_TYPE,
  decode: decodeOip,
  encode: encodeOip,
};

/** KServe's ModelInferRequest and ModelInferResponse in protobuf (what gRPC ModelInfer sends). */
const modelInfer: Codec = {
  mediaType: MODEL_INFER_MEDIA_TYPE,
  decode: decodeModelInfer,
  encode: encodeModelInfer,
};

const kCodecs = [json, csv, npy, oip, modelInfer];
const kMediaTypes = kCodecs.map((c) => c.mediaType);

/** A missing Content-Type is read as JSON, as before content types were negotiated. */
export function decoderFor(contentType: string): Codec {
  const type = essence(contentType) || json.mediaType;
  // The OIP type ends in +json but is not plain JSON: it is matched first.
  const codec = kCodecs.find((c) => c.mediaType === type) ?? (isJson(type) ? json : undefined);
  if (!codec) {
    throw new MmeError(
      'MME_ERR_UNSUPPORTED_MEDIA_TYPE',
      `Content-Type ${quote(contentType)} is not supported by the default handler; supported: ${kMediaTypes.join(', ')} (curl: -H 'Content-Type: application/json')`,
    );
  }
  return codec;
}

export function encoderFor(accept: string): Codec {
  const type = negotiate(accept, kMediaTypes);
  if (!type) {
    throw notAcceptable(
      `Accept ${quote(accept)} asks for no type the default handler produces; supported: ${kMediaTypes.join(', ')}`,
    );
  }
  return kCodecs.find((c) => c.mediaType === type)!;
}

/** The answer and its Content-Type: the codec's media type, or the codec's own when its body needs parameters there. */
export function encodeAnswer(
  codec: Codec,
  outputs: Record<string, PlainTensor>,
  meta: EncodeMeta,
): { body: string | Buffer; contentType: string } {
  const encoded = codec.encode(outputs, meta);
  return typeof encoded === 'string' || Buffer.isBuffer(encoded)
    ? { body: encoded, contentType: codec.mediaType }
    : encoded;
}

function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch (err) {
    throw new MmeError('MME_ERR_INVALID_INPUT', `the request body is not valid JSON: ${quote((err as Error).message)}`);
  }
}

/** A CSV or .npy body is one array: it feeds the model's only input, and answers as a bare JSON array. */
function single(
  inputs: readonly TensorInfo[],
  mediaType: string,
  decode: (info: TensorInfo) => Tensor,
): DecodedRequest {
  const what = `a ${mediaType} body is one array, so it`;
  return { format: 'bare', feeds: onlyInput(inputs, what, decode, 'application/json ') };
}

function onlyOutput(outputs: Record<string, PlainTensor>, mediaType: string): PlainTensor {
  const names = Object.keys(outputs);
  if (names.length !== 1) {
    throw notAcceptable(
      `${mediaType} holds one array, but this model has ${names.length} outputs (${names.join(', ')}); ask for Accept: application/json`,
    );
  }
  return outputs[names[0]];
}
