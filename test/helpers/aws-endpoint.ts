/**
 * A local HTTP endpoint standing in for an AWS service, so that tests drive the real AWS SDK v3
 * client against it and check the exact requests it sends. It records every request (method, path,
 * headers, body, the SigV4 access key) and leaves the answer to the service's fake.
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** Credentials the SDK's default chain picks up from the environment; no real account behind them. */
export const FAKE_AWS_CREDENTIALS = {
  AWS_ACCESS_KEY_ID: 'AKIDMMETEST',
  AWS_SECRET_ACCESS_KEY: 'not-a-secret',
} as const;

export interface AwsRequest {
  method: string;
  /** Path and query, as sent. */
  url: string;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  /** The access key id the request was SigV4-signed with; '' when it was not signed. */
  accessKeyId: string;
}

/** Answers one request; returning without ending `res` leaves the client hanging (a fault to inject). */
export type AwsHandler = (req: AwsRequest, res: http.ServerResponse) => void;

async function record(req: http.IncomingMessage): Promise<AwsRequest> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return {
    method: req.method ?? '',
    url: req.url ?? '',
    headers: req.headers,
    body: Buffer.concat(chunks),
    accessKeyId: /^AWS4-HMAC-SHA256 Credential=([^/]+)\//.exec(String(req.headers.authorization))?.[1] ?? '',
  };
}

export class LocalAwsEndpoint {
  readonly requests: AwsRequest[] = [];
  readonly #sockets = new Set<Socket>();

  private constructor(
    private readonly server: http.Server,
    readonly url: string,
  ) {
    server.on('connection', (s) => {
      this.#sockets.add(s);
      s.on('close', () => this.#sockets.delete(s));
    });
  }

  static async start(handle: AwsHandler): Promise<LocalAwsEndpoint> {
    // eslint-disable-next-line prefer-const -- the request handler closes over it before it is set
    let endpoint: LocalAwsEndpoint | undefined;
    const server = http.createServer((req, res) => {
      record(req)
        .then((recorded) => {
          endpoint!.requests.push(recorded);
          handle(recorded, res);
        })
        .catch((err: Error) => res.destroy(err));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    endpoint = new LocalAwsEndpoint(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    return endpoint;
  }

  async close(): Promise<void> {
    for (const s of this.#sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** A service's fake: a LocalAwsEndpoint whose requests go to the subclass's `handle`. */
export abstract class AwsServiceFake {
  protected constructor(private readonly endpoint: LocalAwsEndpoint) {}

  get url(): string {
    return this.endpoint.url;
  }

  close(): Promise<void> {
    return this.endpoint.close();
  }

  protected abstract handle(req: AwsRequest, res: http.ServerResponse): void;

  /** Starts a fresh endpoint and the fake `create` builds on it. */
  protected static async startOn<F extends AwsServiceFake>(create: (endpoint: LocalAwsEndpoint) => F): Promise<F> {
    const fake: F = create(await LocalAwsEndpoint.start((req, res) => fake.handle(req, res)));
    return fake;
  }
}

/** An AWS JSON protocol answer (1.0 or 1.1): `body` as JSON, or an error `{__type, message}` when `status` ≥ 400. */
export function replyAwsJson(
  res: http.ServerResponse,
  version: '1.0' | '1.1',
  status: number,
  body: unknown,
  headers: http.OutgoingHttpHeaders = {},
): void {
  res.writeHead(status, { 'content-type': `application/x-amz-json-${version}`, ...headers });
  res.end(JSON.stringify(body));
}

/**
 * The environment of a script process that must reach only local endpoints: fake credentials, a
 * region, and AWS_ENDPOINT_URL_<SERVICE> (the SDK's own endpoint override) for each service given,
 * e.g. { SAGEMAKER: url }. Profiles and instance metadata are switched off so nothing real is asked.
 */
export function localAwsEnv(endpoints: Record<string, string>): Record<string, string | undefined> {
  return {
    ...FAKE_AWS_CREDENTIALS,
    AWS_SESSION_TOKEN: undefined,
    AWS_PROFILE: undefined,
    AWS_REGION: 'us-east-1',
    AWS_EC2_METADATA_DISABLED: 'true',
    AWS_ENDPOINT_URL: 'http://127.0.0.1:9', // any service not given fails fast instead of reaching AWS
    ...Object.fromEntries(Object.entries(endpoints).map(([service, url]) => [`AWS_ENDPOINT_URL_${service}`, url])),
  };
}
