/** Real @grpc/grpc-js clients of the server's two gRPC services, loaded from the same .proto files. */
import { Metadata, type Client, type ClientOptions, type ServiceError } from '@grpc/grpc-js';
import { connect, type GrpcClients } from '../src/cli/grpc-calls';

export type { GrpcClients };

export function grpcClients(port: number, options: ClientOptions = {}): GrpcClients {
  return connect(`127.0.0.1:${port}`, options);
}

type Unary = (
  req: unknown,
  metadata: Metadata,
  options: { deadline?: number },
  cb: (err: ServiceError | null, res: unknown) => void,
) => unknown;

/** One unary call; rejects with the ServiceError (code, details, metadata). */
export function unary<T = any>(client: Client, method: string, req: unknown = {}, deadlineMs?: number): Promise<T> {
  // eslint-disable-line @typescript-eslint/no-explicit-any
  const fn = (client as unknown as Record<string, Unary>)[method].bind(client);
  return new Promise((resolve, reject) => {
    fn(req, new Metadata(), deadlineMs === undefined ? {} : { deadline: Date.now() + deadlineMs }, (err, res) =>
      err ? reject(err) : resolve(res as T),
    );
  });
}

/** The ServiceError a call fails with (the test fails if it succeeds). */
export async function failure(call: Promise<unknown>): Promise<ServiceError> {
  try {
    await call;
  } catch (err) {
    return err as ServiceError;
  }
  throw new Error('the call succeeded');
}
