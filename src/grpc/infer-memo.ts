/**
 * ModelInfer's translations remembered by the bytes they came from. A model's calls repeat the
 * same names, datatypes and shapes, so the OIP header a request becomes, and the protobuf an
 * answer's OIP header becomes, are built once per shape: building the request header, parsing the
 * answer's and encoding it were most of our own time in a call's profile. A key is exact bytes
 * (the request's wire bytes before its raw contents, the answer's JSON header), so a hit is the
 * same input to the same translation; a hit still checks what varies (the raw sizes). Only
 * translations that succeeded are kept, keys are short (MAX_KEY_BYTES), and a table is cleared
 * when full: a client that sends a new shape every call costs a miss, never memory.
 */
import type { ModelAnswer, ModelRequest } from '../gateway/gateway';
import { oipAnswer } from '../gateway/oip/infer-request';
import { headerLengthOf, sliceBinary } from '../oip/binary-body';
import { EncodedAnswer, encodeAnswerHead, MAX_KEY_BYTES, withRawOutputs, wireKeyOf } from './infer-codec';
import { fromOipAnswer, toOipBody, type ModelInferRequest, type ModelInferResponse } from './kserve-tensors';

/** Shapes remembered per table: far more than the models a server runs at once send. */
const kMaxEntries = 256;

class Table<V> {
  readonly #entries = new Map<string, V>();

  get(key: string): V | undefined {
    return this.#entries.get(key);
  }

  set(key: string, value: V): void {
    if (this.#entries.size >= kMaxEntries) this.#entries.clear();
    this.#entries.set(key, value);
  }
}

/** Each translation: its header, or its answer's encoded fields, and the binary sizes it was built for. */
interface Translation {
  bytes: Buffer;
  sizes: number[];
}

const requests = new Table<Translation>();
const answers = new Table<Translation>();

function sameSizes(sizes: readonly number[], pieces: readonly Buffer[]): boolean {
  if (sizes.length !== pieces.length) return false;
  for (let i = 0; i < sizes.length; i++) if (sizes[i] !== pieces[i].length) return false;
  return true;
}

/** The request as the OIP body the worker reads (toOipBody), the header from the table when it can be. */
export function oipBodyOf(req: ModelInferRequest): { body: ModelRequest['body']; headerLength: number } {
  const key = wireKeyOf(req);
  const raw = req.raw_input_contents;
  const known = key === undefined ? undefined : requests.get(key);
  if (known && sameSizes(known.sizes, raw)) return { body: [known.bytes, ...raw], headerLength: known.bytes.length };
  const { header, binaries } = toOipBody(req);
  if (key !== undefined) requests.set(key, { bytes: header, sizes: binaries.map((b) => b.length) });
  return { body: [header, ...binaries], headerLength: header.length };
}

/**
 * The worker's answer to `req` as a ModelInferResponse (fromOipAnswer), already encoded when it
 * answers in raw_output_contents and its header was seen before.
 */
export function answerOf(req: ModelInferRequest, result: ModelAnswer): ModelInferResponse | EncodedAnswer {
  const raw = req.raw_input_contents.length > 0;
  const headerLength = raw ? headerLengthOf(result.contentType) : null;
  const key =
    headerLength !== null && headerLength <= result.body.length && headerLength <= MAX_KEY_BYTES
      ? result.body.toString('latin1', 0, headerLength)
      : undefined;
  const known = key === undefined ? undefined : answers.get(key);
  const total = result.body.length - (headerLength ?? 0);
  if (known && known.sizes.reduce((a, b) => a + b, 0) === total)
    return new EncodedAnswer(
      withRawOutputs(known.bytes, sliceBinary(result.body.subarray(headerLength!), known.sizes)),
    );
  const res = fromOipAnswer(oipAnswer(req.model_name, result), raw);
  const head =
    key !== undefined && res.raw_output_contents.length === res.outputs.length ? encodeAnswerHead(res) : null;
  if (!head) return res;
  answers.set(key!, { bytes: head, sizes: res.raw_output_contents.map((b) => b.length) });
  return new EncodedAnswer(withRawOutputs(head, res.raw_output_contents));
}
