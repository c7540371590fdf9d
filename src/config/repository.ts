/**
 * The model_repository keys, checked at start-up so that a wrong bucket url or a SageMaker
 * deployment that sets one stops the server with a message instead of failing every load.
 */
import os from 'node:os';
import path from 'node:path';
import { configError } from '../errors';
import type { RepositoryConfig } from './types';
import type { Settings } from './settings';
import { invalidValue } from './values';

/** S3 bucket naming rules (3-63 of lower-case letters, digits, '.', '-'). */
const kBucket = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

export function repositoryConfig(s: Settings, multiModel: boolean, modelCache: boolean): RepositoryConfig | null {
  const raw = s.read('model_repository');
  if (raw === null) return null;
  if (multiModel) {
    throw configError(
      `config key model_repository is set but SAGEMAKER_MULTI_MODEL=true: on SageMaker the platform downloads each model and calls POST /models, so the server must not fetch models itself; unset model_repository${s.fromText('model_repository')}`,
    );
  }
  if (!modelCache) {
    throw invalidValue(
      'config key model_repository',
      raw,
      'needs the self-managed cache, which model_cache=off turns off',
      'model_cache=on (or auto outside SageMaker) with model_repository',
      'model_cache=on',
      s.from('model_cache'),
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
    throw s.invalid(
      'model_repository',
      raw,
      'is not an S3 bucket url',
      's3://bucket or s3://bucket/prefix',
      'model_repository=s3://my-bucket/models',
    );
  }
  return {
    url: raw,
    bucket: m[1],
    prefix,
    endpoint: s.read('model_repository_endpoint'),
    ttlSeconds: s.read('model_repository_ttl'),
    timeoutSeconds: s.read('model_repository_timeout'),
    maxConcurrentDownloads: s.read('max_concurrent_downloads'),
    cacheDir: path.resolve(s.read('model_cache_dir') ?? path.join(os.tmpdir(), 'mme-model-cache')),
    cacheDiskBytes: s.read('model_cache_disk_mb') * 2 ** 20,
  };
}
