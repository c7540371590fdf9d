/**
 * grpc-js answers an undecodable message INTERNAL before any handler runs; it is the client's
 * mistake, so it reaches the handler as a marker that decoded() turns into INVALID_ARGUMENT.
 */
import type { MethodDefinition, ServiceDefinition } from '@grpc/grpc-js';
import { MmeError } from '../errors';
import { inferRequestProblem, predictionsRequestProblem } from './message-limits';

/** What reaches the handler in place of a message refused before or by decoding: why. */
class Refused {
  constructor(readonly message: string) {}
}

/** The wire-level check of each request type that carries client-sized repeated fields. */
const kLimits: ReadonlyMap<string, (bytes: Buffer) => string | null> = new Map([
  ['ModelInferRequest', inferRequestProblem],
  ['PredictionsRequest', predictionsRequestProblem],
]);

export function lenientDecoding(service: ServiceDefinition): ServiceDefinition {
  const out: Record<string, MethodDefinition<unknown, unknown>> = {};
  for (const [name, method] of Object.entries(service as Record<string, MethodDefinition<unknown, unknown>>)) {
    const limits = kLimits.get(
      (method as { requestType?: { type?: { name?: string } } }).requestType?.type?.name ?? '',
    );
    out[name] = {
      ...method,
      requestDeserialize: (bytes: Buffer) => {
        const problem = limits?.(bytes);
        if (problem) return new Refused(`Refused before decoding: ${problem}.`);
        try {
          return method.requestDeserialize(bytes);
        } catch (err) {
          // protobufjs's reason names offsets and wire types, never the message's bytes.
          const reason = String((err as Error)?.message ?? err).slice(0, 200);
          return new Refused(
            `The request message is not a valid protobuf message for ${method.path} (${reason}); encode it with that method's request type from the .proto files.`,
          );
        }
      },
    };
  }
  return out;
}

/** The request message, or INVALID_ARGUMENT when it did not decode. */
export function decoded<T>(message: T): T {
  if (message instanceof Refused) throw new MmeError('MME_ERR_INVALID_INPUT', message.message);
  return message;
}
