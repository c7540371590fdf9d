/**
 * Triton's binary tensor extension: a JSON inference header, then the binary tensors back to back.
 * Over REST the header's length is `Inference-Header-Content-Length`; to a worker (and for Triton's
 * SageMaker clients) the `json-header-size` parameter of application/vnd.sagemaker-triton.binary+json.
 */
import { errorOf } from '../errors';

const invalid = errorOf('MME_ERR_INVALID_INPUT');

export const OIP_MEDIA_TYPE = 'application/vnd.sagemaker-triton.binary+json';
export const HEADER_LENGTH_HEADER = 'inference-header-content-length';

export function oipContentType(headerLength: number): string {
  return `${OIP_MEDIA_TYPE};json-header-size=${headerLength}`;
}

export function headerLengthOf(contentType: string): number | null {
  const m = /;\s*json-header-size\s*=\s*"?(\d+)"?/i.exec(contentType);
  return m ? Number(m[1]) : null;
}

export function splitBody<H>(body: Buffer, headerLength: number): { header: H; binary: Buffer } {
  if (!Number.isSafeInteger(headerLength) || headerLength < 0 || headerLength > body.length) {
    throw invalid(
      `the inference header length (${headerLength}) is not within the ${body.length}-byte body; set Inference-Header-Content-Length to the byte length of the JSON header`,
    );
  }
  let header: H;
  try {
    header = JSON.parse(body.subarray(0, headerLength).toString('utf8')) as H;
  } catch (err) {
    throw invalid(`the inference header is not valid JSON: ${(err as Error).message}`);
  }
  if (header === null || typeof header !== 'object' || Array.isArray(header)) {
    throw invalid(
      'the inference header must be a JSON object like {"inputs": [{"name", "shape", "datatype", "data"}]}',
    );
  }
  return { header, binary: body.subarray(headerLength) };
}

/** A header followed by binary tensors; headerLength says where the binary part starts. */
export function joinBody(header: unknown, binaries: readonly Buffer[]): { body: Buffer; headerLength: number } {
  const json = Buffer.from(JSON.stringify(header));
  return { body: binaries.length === 0 ? json : Buffer.concat([json, ...binaries]), headerLength: json.length };
}

/** Cuts `binary` into consecutive pieces of the given sizes; they must cover it exactly. */
export function sliceBinary(binary: Buffer, sizes: readonly number[]): Buffer[] {
  const total = sizes.reduce((a, b) => a + b, 0);
  if (total !== binary.length) {
    throw invalid(
      `the binary_data_size parameters add up to ${total} bytes, but ${binary.length} bytes follow the inference header`,
    );
  }
  const out: Buffer[] = [];
  let offset = 0;
  for (const n of sizes) {
    out.push(binary.subarray(offset, offset + n));
    offset += n;
  }
  return out;
}
