/**
 * TorchServe's InferenceAPIsService: Ping, Predictions, StreamPredictions (one message per chunk)
 * and StreamPredictions2 (requests answered in order, each failure as that answer's status). The
 * `input` map's "data" or "body" entry is the body; its other entries are request headers.
 */
import type { ServerDuplexStream, ServerWritableStream, UntypedServiceImplementation } from '@grpc/grpc-js';
import { MmeError } from '../errors';
import type { Invocation, ModelRequest } from '../gateway/gateway';
import { checkVersion } from '../gateway/oip/model-metadata';
import type { ModelManager } from '../gateway/models';
import { GrpcCall, unary, type GrpcDeps } from './call';
import { decoded } from './lenient-decoding';
import { answerInOrder, type StreamLoad } from './ordered-stream';

interface PredictionsRequest {
  model_name: string;
  model_version: string;
  input: Record<string, Buffer>;
  sequenceId?: string;
}

interface PredictionResponse {
  prediction: Buffer;
  sequenceId?: string;
  status?: { code: number; message: string };
}

const kBodyKeys = ['data', 'body'];

function modelRequest(req: PredictionsRequest, call: GrpcCall, stream: boolean): ModelRequest {
  checkVersion(req.model_name, req.model_version);
  // The map's keys are client text: only its own entries count.
  const key = kBodyKeys.find((k) => Object.hasOwn(req.input, k));
  if (!key)
    throw new MmeError(
      'MME_ERR_INVALID_INPUT',
      'PredictionsRequest.input has no "data" or "body" entry; put the request body there, e.g. input {"data": "{\\"inputs\\": ...}"}',
    );
  const headers = call.headers();
  for (const [k, v] of Object.entries(req.input)) if (k !== key) headers[k.toLowerCase()] = v.toString('utf8');
  const accept = call.deps.gateway.accept(headers.accept);
  return {
    requestId: call.requestId,
    contentType: headers['content-type'] ?? '',
    accept,
    headers,
    body: req.input[key],
    ...(stream ? { stream: true } : {}),
  };
}

async function predict(
  req: PredictionsRequest,
  call: GrpcCall,
  inv: Invocation,
  signal?: AbortSignal,
): Promise<PredictionResponse> {
  const result = await call.invoke(inv, req.model_name, modelRequest(req, call, false), { signal });
  return { prediction: result.body };
}

/** The model's job_queue_size, or 1 until it is loaded (its settings are not known yet). */
function streamLimit(manager: ModelManager, name: string): number {
  try {
    return manager.get(name).settings.jobQueueSize;
  } catch {
    return 1;
  }
}

export function torchserveService(deps: GrpcDeps, load: StreamLoad): UntypedServiceImplementation {
  return {
    Ping: unary(deps, 'Ping', () => ({
      health: JSON.stringify(
        { status: deps.manager.list().some((m) => m.failed) ? 'Partial Healthy' : 'Healthy' },
        null,
        2,
      ),
    })),
    Predictions: unary(deps, 'Predictions', predict),
    StreamPredictions: (stream: ServerWritableStream<PredictionsRequest, PredictionResponse>) => {
      const call = new GrpcCall(deps, stream, 'StreamPredictions');
      call.serve(
        (inv) => {
          const req = decoded(stream.request);
          return call.invoke(inv, req.model_name, modelRequest(req, call, true), {
            onChunk: (chunk, delivered) => {
              // The handler sends its next chunk once this one is on its way (back-pressure, as over HTTP).
              stream.write({ prediction: chunk.body! }, () => delivered());
            },
          });
        },
        (err, result) => {
          if (err) stream.emit('error', err);
          else {
            stream.write({ prediction: result!.body });
            stream.end();
          }
        },
      );
    },
    StreamPredictions2: (stream: ServerDuplexStream<PredictionsRequest, PredictionResponse>) => {
      const call = new GrpcCall(deps, stream, 'StreamPredictions2');
      answerInOrder(stream, {
        limit: (req) => streamLimit(deps.manager, req.model_name),
        answer: async (req, signal) => {
          const sequenceId = req.sequenceId ?? '';
          try {
            const inv = call.guard();
            return { ...(await predict(decoded(req), call, inv, signal)), sequenceId };
          } catch (err) {
            const status = call.fail(err);
            return {
              prediction: Buffer.alloc(0),
              sequenceId,
              status: { code: status.code!, message: status.details! },
            };
          }
        },
        signal: call.signal,
        load,
        finished: () => {
          call.answered();
          stream.end();
        },
      });
    },
  };
}
