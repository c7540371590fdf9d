/**
 * The S3 side of model_repository: listing a model directory and getting one object, with the
 * store's failures turned into the few answers a client may see. Credentials, region and endpoint
 * come from the AWS SDK's default chain; the SDK retries 5xx, throttling and dropped connections
 * with exponential back-off (maxAttempts), so what reaches the caller has already been retried.
 */
import type { Readable } from 'node:stream';
import type { S3Client } from '@aws-sdk/client-s3';

type Sdk = typeof import('@aws-sdk/client-s3');
import type { RepositoryConfig } from '../config/types';
import { invalidModel, MmeError } from '../errors';

export interface StoredObject {
  readonly key: string;
  readonly size: number;
  readonly etag: string;
}

export type GetResult =
  | { readonly kind: 'missing' }
  | { readonly kind: 'not-modified' }
  | { readonly kind: 'body'; readonly body: Readable; readonly size: number; readonly etag: string };

/** One request plus three retries: a store that is down for longer is reported, not waited out. */
const kMaxAttempts = 4;
/** A model directory is a handful of files; a prefix holding more is a mistake, not a model. */
export const kMaxObjects = 1000;
/**
 * Listing pages one load may ask for: a model directory of kMaxObjects fits in one page of S3's
 * 1000 keys, or a few of a store that pages smaller. A store answering empty pages with
 * IsTruncated forever would otherwise be asked hundreds of times a second until the load ends.
 */
export const kMaxListPages = 20;

const kRefused = new Set([
  'AccessDenied',
  'InvalidAccessKeyId',
  'SignatureDoesNotMatch',
  'ExpiredToken',
  'InvalidToken',
  'CredentialsProviderError',
  'AllAccessDisabled',
  'NoSuchBucket',
]);
const kTimeouts = new Set(['TimeoutError', 'RequestTimeout', 'RequestTimeoutException', 'ETIMEDOUT']);

export class ObjectStore {
  /** Made at the first request: the SDK stays out of a server's heap until a model comes from the store. */
  #sdk: Promise<{ client: S3Client; sdk: Sdk }> | null = null;

  constructor(
    private readonly config: RepositoryConfig,
    private readonly env: NodeJS.ProcessEnv = process.env,
  ) {}

  #connect(): Promise<{ client: S3Client; sdk: Sdk }> {
    const { config, env } = this;
    const timeoutMs = config.timeoutSeconds * 1000;
    this.#sdk ??= import('@aws-sdk/client-s3').then((sdk) => ({
      sdk,
      client: new sdk.S3Client({
        // S3-compatible stores rarely serve virtual-host style (bucket.host) names.
        ...(config.endpoint ? { endpoint: config.endpoint, forcePathStyle: true } : {}),
        // A local store has no region, but SigV4 needs one; otherwise the default chain decides.
        ...(config.endpoint && !env.AWS_REGION && !env.AWS_DEFAULT_REGION ? { region: 'us-east-1' } : {}),
        followRegionRedirects: true,
        maxAttempts: kMaxAttempts,
        requestHandler: { connectionTimeout: timeoutMs, requestTimeout: timeoutMs },
      }),
    }));
    return this.#sdk;
  }

  /** The objects under `prefix` (which ends with '/'), folder markers left out. */
  async list(prefix: string, signal: AbortSignal): Promise<StoredObject[]> {
    const out: StoredObject[] = [];
    let token: string | undefined;
    const { client, sdk } = await this.#connect();
    for (let pages = 0; ; pages++) {
      if (pages === kMaxListPages) {
        throw unavailable(
          `model_repository's listing of ${prefix.slice(0, 100)} went on past ${kMaxListPages} pages (the most one load asks for, kMaxListPages) with ${out.length} objects: the store keeps answering IsTruncated; check the store`,
        );
      }
      const page = await client.send(
        new sdk.ListObjectsV2Command({ Bucket: this.config.bucket, Prefix: prefix, ContinuationToken: token }),
        { abortSignal: signal },
      );
      for (const o of page.Contents ?? []) {
        if (o.Key && !o.Key.endsWith('/')) out.push({ key: o.Key, size: o.Size ?? 0, etag: o.ETag ?? '' });
      }
      if (out.length > kMaxObjects) {
        throw invalidModel(
          `the model directory in model_repository holds more than ${kMaxObjects} objects; a model is model.onnx with a few files beside it`,
        );
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
      if (!token) return out;
    }
  }

  /** GetObject, conditional on the ETag we hold when one is given. */
  async get(key: string, ifNoneMatch: string | null, signal: AbortSignal): Promise<GetResult> {
    const { client, sdk } = await this.#connect();
    try {
      const r = await client.send(
        new sdk.GetObjectCommand({
          Bucket: this.config.bucket,
          Key: key,
          ...(ifNoneMatch ? { IfNoneMatch: ifNoneMatch } : {}),
        }),
        { abortSignal: signal },
      );
      return { kind: 'body', body: r.Body as Readable, size: r.ContentLength ?? -1, etag: r.ETag ?? '' };
    } catch (err) {
      const status = statusOf(err);
      if (status === 304) return { kind: 'not-modified' };
      if (status === 404 && nameOf(err) !== 'NoSuchBucket') return { kind: 'missing' };
      throw err;
    }
  }

  destroy(): void {
    void this.#sdk?.then(({ client }) => client.destroy());
  }
}

function statusOf(err: unknown): number | undefined {
  return (err as { $metadata?: { httpStatusCode?: number } } | null)?.$metadata?.httpStatusCode;
}

function nameOf(err: unknown): string {
  const e = err as { name?: string; Code?: string; code?: string } | null;
  return e?.Code ?? e?.name ?? e?.code ?? 'Error';
}

/** 503: the model cannot be had from the repository now; a retry in a few seconds may find it. */
export function unavailable(message: string): MmeError {
  return new MmeError('MME_ERR_REPOSITORY_UNAVAILABLE', message, { headers: { 'Retry-After': '5' } });
}

/**
 * What a client is told when the store failed: 503 for refused credentials or a store that kept
 * failing, 504 for silence. The store's own error code goes to the log only: it can name the
 * bucket, the account or the credential source.
 */
export function storeFailure(err: unknown, model: string, where: string, log: (line: string) => void): MmeError {
  if (err instanceof MmeError) return err;
  const name = nameOf(err);
  const status = statusOf(err);
  log(
    `[${model}] model_repository ${where}: ${name}${status ? ` (HTTP ${status})` : ''}: ${(err as Error)?.message ?? String(err)}`,
  );
  if (kTimeouts.has(name)) {
    return new MmeError(
      'MME_ERR_REPOSITORY_TIMEOUT',
      `Model ${model}: model_repository did not answer within model_repository_timeout; retry later.`,
    );
  }
  const refused = kRefused.has(name) || status === 401 || status === 403;
  return unavailable(
    `Model ${model}: model_repository ${refused ? "refused the server's credentials" : 'is unavailable'}; the server log has the store's answer.`,
  );
}
