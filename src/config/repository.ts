/**
 * The model_repository keys, checked at start-up so that a wrong bucket url or a SageMaker
 * deployment that sets one stops the server with a message instead of failing every load.
 */
import os from 'node:os';
import path from 'node:path';
import { MmeError } from '../errors';
import type { RepositoryConfig } from './types';
import { invalidValue, type Setting } from './values';

export interface RepositoryKeys {
  readonly url: string | null;
  readonly endpoint: string | null;
  readonly ttlSeconds: number;
  readonly timeoutSeconds: number;
  readonly maxConcurrentDownloads: number;
  readonly cacheDir: string | null;
  readonly cacheDiskMb: number;
}

/** S3 bucket naming rules (3-63 of lower-case letters, digits, '.', '-'). */
const kBucket = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

export function repositoryConfig(
  keys: RepositoryKeys,
  settings: ReadonlyMap<string, Setting>,
  multiModel: boolean,
  modelCache: boolean,
): RepositoryConfig | null {
  const raw = keys.url;
  if (raw === null) return null;
  const from = (key: string) => settings.get(key)?.from ?? null;
  if (multiModel) {
    throw new MmeError(
      'MME_ERR_CONFIG',
      `config key model_repository is set but SAGEMAKER_MULTI_MODEL=true: on SageMaker the platform downloads each model and calls POST /models, so the server must not fetch models itself; unset model_repository${from('model_repository') ? ` (set ${from('model_repository')})` : ''}`,
    );
  }
  if (!modelCache) {
    throw invalidValue(
      'config key model_repository',
      raw,
      'needs the self-managed cache, which model_cache=off turns off',
      'model_cache=on (or auto outside SageMaker) with model_repository',
      'model_cache=on',
      from('model_cache'),
    );
  }
  const m = /^s3:\/\/([^/]+)(?:\/(.*))?$/.exec(raw);
  const prefix = (m?.[2] ?? '').replace(/\/+$/, '');
  if (
    !m ||
    !kBucket.test(m[1]) ||
    prefix.split('/').some((part) => part === '..' || part === '.') ||
    /\/\//.test(prefix)
  ) {
    throw invalidValue(
      'config key model_repository',
      raw,
      'is not an S3 bucket url',
      's3://bucket or s3://bucket/prefix',
      'model_repository=s3://my-bucket/models',
      from('model_repository'),
    );
  }
  if (keys.endpoint !== null && !/^https?:\/\/[^/]/.test(keys.endpoint)) {
    throw invalidValue(
      'config key model_repository_endpoint',
      keys.endpoint,
      'is not an http(s) URL',
      'an http:// or https:// URL',
      'model_repository_endpoint=http://minio:9000',
      from('model_repository_endpoint'),
    );
  }
  return {
    url: raw,
    bucket: m[1],
    prefix,
    endpoint: keys.endpoint,
    ttlSeconds: keys.ttlSeconds,
    timeoutSeconds: keys.timeoutSeconds,
    maxConcurrentDownloads: keys.maxConcurrentDownloads,
    cacheDir: path.resolve(keys.cacheDir ?? path.join(os.tmpdir(), 'mme-model-cache')),
    cacheDiskBytes: keys.cacheDiskMb * 2 ** 20,
  };
}
