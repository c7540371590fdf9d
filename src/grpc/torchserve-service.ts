/**
 * TorchServe's InferenceAPIsService: Ping, Predictions, StreamPredictions (one message per chunk)
 * and StreamPredictions2 (requests answered in order, each failure as that answer's status). The
 * `input` map's "data" or "body" entry is the body; its other entries are request headers.
 */
import type { ServerDuplexStream, ServerWritableStream, UntypedServiceImplementation } from '@grpc/grpc-js';
import { MmeError } from '../errors';
import { checkVersion, pingStatus } from '../gateway/oip/model-metadata';
import type { ModelManager } from '../gateway/models';
import { GrpcCall, GrpcRequest, unary, type GrpcDeps, type GrpcMethod, type GrpcSink } from './call';
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

function predictions(stream: boolean): GrpcMethod<PredictionsRequest, PredictionResponse> {
  return {
    target: (req) => checkVersion(req.model_name, req.model_version),
    payload: (req, call) => {
      // The map's keys are client text: only its own entries count.
      const key = kBodyKeys.find((k) => Object.hasOwn(req.input, k));
      if (!key)
        throw new MmeError(
          'MME_ERR_INVALID_INPUT',
          'PredictionsRequest.input has no "data" or "body" entry; put the request body there, e.g. input {"data": "{\\"inputs\\": ...}"}',
        );
      const headers = Object.assign(Object.create(null) as Record<string, string>, call.headers);
      for (const [k, v] of Object.entries(req.input)) if (k !== key) headers[k.toLowerCase()] = v.toString('utf8');
      const contentType = headers['content-type'] ?? '';
      return { headers, body: req.input[key], contentType, accept: headers.accept, ...(stream ? { stream } : {}) };
    },
    answer: (_req, result) => ({ prediction: result!.body }),
  };
}

const kPredictions = predictions(false);
const kStreamPredictions = predictions(true);

/** The model's job_queue_size, or 1 until it is loaded (its settings are not known yet). */
function streamLimit(manager: ModelManager, name: string): number {
  try {
    return manager.registry.get(name).settings.jobQueueSize;
  } catch {
    return 1;
  }
}

export function torchserveService(deps: GrpcDeps, load: StreamLoad): UntypedServiceImplementation {
  const { gateway, manager } = deps;
  return {
    Ping: unary(deps, 'Ping', { answer: () => ({ health: JSON.stringify(pingStatus(manager.registry), null, 2) }) }),
    Predictions: unary(deps, 'Predictions', kPredictions),
    StreamPredictions: (stream: ServerWritableStream<PredictionsRequest, PredictionResponse>) => {
      const call = new GrpcCall(deps, stream, 'StreamPredictions');
      const request = new GrpcRequest(
        call,
        kStreamPredictions,
        stream.request,
        (err, result) => {
          call.answered();
          if (err) stream.emit('error', err);
          else {
            stream.write(result!);
            stream.end();
          }
        },
        call,
        // The handler sends its next chunk once this one is on its way (back-pressure, as over HTTP).
        (chunk, delivered) => stream.write({ prediction: chunk.body! }, () => delivered()),
      );
      void gateway.handle(request);
    },
    StreamPredictions2: (stream: ServerDuplexStream<PredictionsRequest, PredictionResponse>) => {
      const call = new GrpcCall(deps, stream, 'StreamPredictions2');
      answerInOrder(stream, {
        limit: (req) => streamLimit(manager, req.model_name),
        answer: (req, signal) =>
          new Promise((resolve) => {
            const sequenceId = req.sequenceId ?? '';
            const answered: GrpcSink<PredictionResponse> = (err, result) =>
              resolve(
                err
                  ? { prediction: Buffer.alloc(0), sequenceId, status: { code: err.code!, message: err.details! } }
                  : { ...result!, sequenceId },
              );
            void gateway.handle(new GrpcRequest(call, kPredictions, req, answered, signal));
          }),
        signal: call,
        load,
        finished: () => {
          call.answered();
          stream.end();
        },
      });
    },
  };
}
