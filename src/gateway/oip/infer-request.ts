/**
 * A v2 inference as the worker's OIP codec takes it (src/worker-process/oip-codec.ts), and its
 * answer taken apart again, for both doors (REST /v2/models/{name}/infer and gRPC ModelInfer).
 */
import { MmeError } from '../../errors';
import type { InvokeResult } from '../../server/jobs/job';
import { headerLengthOf, OIP_MEDIA_TYPE, oipContentType, splitBody, type SplitBody } from '../../oip/binary-body';
import type { V2InferResponse } from '../../oip/types';
import type { ModelRequest } from '../gateway';

/** `body` is a JSON inference header of `headerLength` bytes, then the binary tensors it names. */
export function oipRequest(
  requestId: string,
  body: ModelRequest['body'],
  headerLength: number,
  headers: ModelRequest['headers'],
): ModelRequest {
  return { requestId, contentType: oipContentType(headerLength), accept: OIP_MEDIA_TYPE, headers, body };
}

/** The answer's header and binary part; a handler that answered something else is a model error. */
export function oipAnswer(model: string, result: InvokeResult): SplitBody<V2InferResponse> {
  let answer: SplitBody<V2InferResponse> | null;
  try {
    answer = splitBody<V2InferResponse>(result.body, headerLengthOf(result.contentType) ?? result.body.length);
  } catch {
    answer = null;
  }
  if (!answer || !Array.isArray(answer.header.outputs)) {
    throw new MmeError(
      'MME_ERR_MODEL_ERROR',
      `Model ${model} answered without an OIP v2 "outputs" list; its handler must answer v2 inference requests (Content-Type ${OIP_MEDIA_TYPE}) with a v2 response.`,
    );
  }
  return answer;
}
