/** Sends a boundary call over HTTP or gRPC and records what came back, whole or in chunks. */
import { Metadata, type ServiceError } from '@grpc/grpc-js';
import { FREE_CHUNKS, MIN_CHUNK_BYTES } from '../../src/http/body';
import type { GrpcClients } from '../grpc-clients';
import type { Call } from './calls';

export interface Endpoints {
  /** http://host:port of the inference listener. */
  url: string;
  grpc: GrpcClients;
}

/** What came back: an HTTP status or a gRPC status code, and the bytes the answer took. */
export interface Outcome {
  transport: Call['transport'];
  /** HTTP status; for gRPC the status code (0 = OK). */
  status: number;
  /** errorCode of an HTTP error body, or mme-error-code of a gRPC status. */
  errorCode: string;
  /** The body (HTTP) or prediction (TorchServe); a KServe response is in `message`. */
  body: Buffer;
  headers: Record<string, string>;
  message?: unknown;
  /** Bytes of the refusal: HTTP body, or gRPC details plus trailing metadata. */
  errorBytes: number;
  /** The request got no answer at all (connection reset, timeout). */
  transportError?: string;
}

/** Past the models' response_timeout (30 s) with room: a request still unanswered then never will be. */
const kAnswerTimeoutMs = 45_000;

export async function send(call: Call, to: Endpoints): Promise<Outcome> {
  if (call.transport === 'http') return sendHttp(call, to.url);
  const service = call.transport === 'grpc-raw' ? call.service : call.transport;
  const client = service === 'kserve' ? to.grpc.kserve : to.grpc.torchserve;
  const method = service === 'kserve' ? 'ModelInfer' : 'Predictions';
  return new Promise((resolve) => {
    const options = { deadline: Date.now() + kAnswerTimeoutMs };
    const done = (err: ServiceError | null, res: Record<string, unknown>) => {
      if (!err) {
        resolve({
          transport: call.transport,
          status: 0,
          errorCode: '',
          body: (res.prediction as Buffer | undefined) ?? Buffer.alloc(0),
          headers: {},
          message: res,
          errorBytes: 0,
        });
        return;
      }
      const metadata = err.metadata?.getMap() ?? {};
      const metaBytes = Object.entries(metadata).reduce(
        (n, [k, v]) => n + k.length + (Buffer.isBuffer(v) ? v.length : Buffer.byteLength(String(v))),
        0,
      );
      resolve({
        transport: call.transport,
        status: err.code,
        errorCode: String(metadata['mme-error-code'] ?? ''),
        body: Buffer.alloc(0),
        headers: {},
        errorBytes: Buffer.byteLength(err.details ?? '') + metaBytes,
      });
    };
    if (call.transport === 'grpc-raw') {
      // The bytes as they are, past the client library's encoder.
      const raw = (b: Buffer) => b;
      client.makeUnaryRequest(kRawPaths[service], raw, raw, call.bytes, new Metadata(), options, (err, res) =>
        done(err, { raw: res }),
      );
      return;
    }
    // A request the client library cannot encode throws here: a generator bug, not a server finding.
    client[method](call.request, new Metadata(), options, done);
  });
}

const kRawPaths = {
  kserve: '/inference.GRPCInferenceService/ModelInfer',
  torchserve: '/org.pytorch.serve.grpc.inference.InferenceAPIsService/Predictions',
} as const;

/** The body whole, or as a stream of pieces of the given sizes (repeated) that goes out one HTTP chunk each. */
function inChunks(body: Buffer, sizes: readonly number[] | undefined): Buffer | ReadableStream<Uint8Array> {
  if (!sizes) return body;
  const pieces = chunkPieces(body.length, sizes).map(([at, end]) => body.subarray(at, end));
  return new ReadableStream({
    start(controller) {
      for (const p of pieces) controller.enqueue(p);
      controller.close();
    },
  });
}

/** [start, end) of each chunk: `sizes` over and over until `length` bytes are covered. */
function chunkPieces(length: number, sizes: readonly number[]): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  for (let at = 0, i = 0; at < length; i++) {
    const end = Math.min(length, at + sizes[i % sizes.length]);
    out.push([at, end]);
    at = end;
  }
  return out;
}

/**
 * What the server must do with a chunked call: take it, refuse it (its chunks alone pass the
 * body reader's limit, src/http/body.ts), or either (within a margin of the limit: a chunk split
 * across two socket reads reaches the reader as two).
 */
export function chunkVerdict(call: Call): 'taken' | 'refused' | 'either' {
  if (call.transport !== 'http' || !call.chunks) return 'taken';
  let verdict: 'taken' | 'either' = 'taken';
  let n = 0;
  for (const [, end] of chunkPieces(call.body.length, call.chunks)) {
    const limit = FREE_CHUNKS + end / MIN_CHUNK_BYTES;
    if (++n > limit) return 'refused';
    if (n + 16 + n / 16 > limit) verdict = 'either';
  }
  return verdict;
}

/**
 * The server's refusal of a body in too many small chunks: by its errorCode, or under /v2, whose
 * error body is OIP's `{"error"}` with no code, by the body reader's message.
 */
export function isChunkRefusal(o: Outcome): boolean {
  if (o.status !== 400) return false;
  if (o.errorCode === 'MME_ERR_BODY_CHUNKS_TOO_SMALL') return true;
  try {
    const { error } = JSON.parse(o.body.toString('utf8')) as { error?: unknown };
    return typeof error === 'string' && /^The chunked request body came in \d+ chunks for \d+ bytes;/.test(error);
  } catch {
    return false;
  }
}

async function sendHttp(call: Extract<Call, { transport: 'http' }>, url: string): Promise<Outcome> {
  try {
    const res = await fetch(`${url}${call.path}`, {
      method: 'POST',
      headers: call.headers,
      body: inChunks(call.body, call.chunks),
      signal: AbortSignal.timeout(kAnswerTimeoutMs),
      duplex: 'half',
    });
    const body = Buffer.from(await res.arrayBuffer());
    let errorCode = '';
    if (res.status >= 400) {
      try {
        const code = (JSON.parse(body.toString('utf8')) as { errorCode?: unknown }).errorCode ?? '';
        // A string as it is (isChunkRefusal compares it); anything else shown as JSON.
        errorCode = typeof code === 'string' ? code : JSON.stringify(code);
      } catch {
        errorCode = 'unparsable error body';
      }
    }
    return {
      transport: 'http',
      status: res.status,
      errorCode,
      body,
      headers: Object.fromEntries(res.headers),
      errorBytes: res.status >= 400 ? body.length : 0,
    };
  } catch (err) {
    return {
      transport: 'http',
      status: 0,
      errorCode: '',
      body: Buffer.alloc(0),
      headers: {},
      errorBytes: 0,
      transportError: `${(err as Error).name}: ${(err as Error).message} ${(err as { cause?: Error }).cause?.message ?? ''}`,
    };
  }
}
