/**
 * Server errors as gRPC statuses: the stable error code rides along in the trailing metadata
 * (mme-error-code), as errorCode does in the HTTP error body.
 */
import {
  Metadata,
  ServerInterceptingCall,
  status as Status,
  type ServerInterceptor,
  type StatusObject,
} from '@grpc/grpc-js';
import { capMessage, MmeError, quote, type ErrorCode } from '../errors';

/** Codes whose HTTP status does not say which gRPC status they are. */
const kByCode: ReadonlyMap<ErrorCode, Status> = new Map([
  ['MME_ERR_QUEUE_FULL', Status.RESOURCE_EXHAUSTED],
  ['MME_ERR_PAYLOAD_TOO_LARGE', Status.RESOURCE_EXHAUSTED],
  ['MME_ERR_INSUFFICIENT_MEMORY', Status.RESOURCE_EXHAUSTED],
  ['MME_ERR_CLIENT_CLOSED', Status.CANCELLED],
  ['MME_ERR_DEADLINE_EXCEEDED', Status.DEADLINE_EXCEEDED],
]);

/** A handler may raise any status, so this is keyed by what it chose. */
const kByHttpStatus: ReadonlyMap<number, Status> = new Map([
  [401, Status.UNAUTHENTICATED],
  [403, Status.PERMISSION_DENIED],
  [404, Status.NOT_FOUND],
  [409, Status.ALREADY_EXISTS],
  [429, Status.RESOURCE_EXHAUSTED],
  [501, Status.UNIMPLEMENTED],
  [503, Status.UNAVAILABLE],
  [504, Status.DEADLINE_EXCEEDED],
  [507, Status.RESOURCE_EXHAUSTED],
]);

/**
 * Details travel percent-encoded (up to 9 bytes a character), and gRPC C++ clients turn metadata
 * over 8 KiB into INTERNAL.
 */
export const DETAILS_LIMIT = 1024;

export function grpcStatusOf(e: MmeError): Status {
  const mapped = kByCode.get(e.code) ?? kByHttpStatus.get(e.status);
  if (mapped !== undefined) return mapped;
  // A handler may raise any 4xx: each is something wrong with the request.
  return e.status >= 400 && e.status < 500 ? Status.INVALID_ARGUMENT : Status.INTERNAL;
}

export function toServiceError(e: MmeError): StatusObject {
  const metadata = new Metadata();
  metadata.set('mme-error-code', e.code);
  // Well-formed as well as short: grpc-js percent-encodes details with encodeURI, which throws on a
  // lone surrogate, and UTF-8 encoding replaces one with U+FFFD.
  const details = Buffer.from(capMessage(e.message, DETAILS_LIMIT), 'utf8').toString('utf8');
  return { code: grpcStatusOf(e), details, metadata };
}

/** How grpc-js 1.x words its refusal of a grpc-timeout it cannot parse (server-interceptors.ts). */
const kBadTimeout = /^Invalid grpc-timeout value "(.*)"$/s;

/**
 * grpc-js refuses a malformed grpc-timeout as INTERNAL, a client fault that is INVALID_ARGUMENT
 * here; it sends it from its own call object past every interceptor, so this rewrites it there.
 */
export const malformedTimeoutStatus: ServerInterceptor = (_method, call) => {
  const send = call.sendStatus.bind(call);
  call.sendStatus = (status) => {
    const bad = status.code === Status.INTERNAL ? kBadTimeout.exec(status.details) : null;
    if (bad === null) return send(status);
    const e = new MmeError(
      'MME_ERR_INVALID_INPUT',
      `grpc-timeout is ${quote(bad[1])}; set it to 1 to 8 digits and a unit (H, M, S, m, u or n), e.g. 500m, or leave it out for no deadline`,
    );
    send(toServiceError(e));
  };
  return new ServerInterceptingCall(call);
};
