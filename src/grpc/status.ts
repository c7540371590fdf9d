/**
 * Server errors as gRPC statuses: the stable error code rides along in the trailing metadata
 * (mme-error-code), as errorCode does in the HTTP error body.
 */
import { Metadata, status as Status, type ServiceError } from '@grpc/grpc-js';
import type { ErrorCode, MmeError } from '../errors';

/** Codes whose HTTP status does not say which gRPC status they are. */
const kByCode: Partial<Record<ErrorCode, Status>> = {
  MME_ERR_QUEUE_FULL: Status.RESOURCE_EXHAUSTED,
  MME_ERR_PAYLOAD_TOO_LARGE: Status.RESOURCE_EXHAUSTED,
  MME_ERR_INSUFFICIENT_MEMORY: Status.RESOURCE_EXHAUSTED,
  MME_ERR_CLIENT_CLOSED: Status.CANCELLED,
};

const kByHttpStatus: Record<number, Status> = {
  401: Status.UNAUTHENTICATED,
  403: Status.PERMISSION_DENIED,
  404: Status.NOT_FOUND,
  409: Status.ALREADY_EXISTS,
  429: Status.RESOURCE_EXHAUSTED,
  501: Status.UNIMPLEMENTED,
  503: Status.UNAVAILABLE,
  504: Status.DEADLINE_EXCEEDED,
};

export function grpcStatusOf(e: MmeError): Status {
  const mapped = kByCode[e.code] ?? kByHttpStatus[e.status];
  if (mapped !== undefined) return mapped;
  // A handler may raise any 4xx: each is something wrong with the request.
  return e.status >= 400 && e.status < 500 ? Status.INVALID_ARGUMENT : Status.INTERNAL;
}

export function toServiceError(e: MmeError): Partial<ServiceError> {
  const metadata = new Metadata();
  metadata.set('mme-error-code', e.code);
  return { code: grpcStatusOf(e), details: e.message, metadata };
}
