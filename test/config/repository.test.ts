import assert from 'node:assert/strict';
import { resolveConfig, type Env } from '../../src/config/resolve';
import type { ServerConfig } from '../../src/config/types';
import { isMmeError } from '../../src/errors';

function resolve(fileText: string, env: Env = {}): ServerConfig {
  return resolveConfig({
    fileText,
    configFile: 'c.properties',
    env,
    argv: { command: null, mmsConfig: null, modelStore: null, models: null, help: false },
  });
}

function configError(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    assert.ok(isMmeError(err) && err.code === 'MME_ERR_CONFIG', String(err));
    return err.message;
  }
  assert.fail('expected MME_ERR_CONFIG');
}

describe('model_repository keys', () => {
  it('reads the bucket, the prefix and the disk cache keys', () => {
    const c = resolve(
      'model_repository=s3://my-bucket/team/models/\nmodel_repository_endpoint=http://minio:9000\nmodel_cache_dir=/cache\nmodel_cache_disk_mb=100\nmodel_repository_ttl=5\nmax_concurrent_downloads=3',
    );
    assert.deepEqual(c.repository, {
      url: 's3://my-bucket/team/models/',
      bucket: 'my-bucket',
      prefix: 'team/models',
      endpoint: 'http://minio:9000',
      ttlSeconds: 5,
      timeoutSeconds: 30,
      maxConcurrentDownloads: 3,
      cacheDir: '/cache',
      cacheDiskBytes: 100 * 2 ** 20,
    });
    assert.equal(resolve('model_repository=s3://my-bucket').repository?.prefix, '');
    assert.equal(resolve('').repository, null);
  });

  it('is read from the environment like every key (MMS_MODEL_REPOSITORY with enable_envvars_config)', () => {
    assert.equal(
      resolve('enable_envvars_config=true', { MMS_MODEL_REPOSITORY: 's3://env-bucket/p' }).repository?.bucket,
      'env-bucket',
    );
  });

  it('is refused at start in SageMaker mode, where the platform downloads', () => {
    assert.match(
      configError(() => resolve('model_repository=s3://b-1/p', { SAGEMAKER_MULTI_MODEL: 'true' })),
      /SAGEMAKER_MULTI_MODEL=true.*unset model_repository/,
    );
  });

  it('refuses what is not an s3 bucket url, and an endpoint that is not http(s)', () => {
    assert.match(
      configError(() => resolve('model_repository=https://b/p')),
      /model_repository: "https:\/\/b\/p" is not an S3 bucket url \(expected s3:\/\/bucket/,
    );
    assert.match(
      configError(() => resolve('model_repository=s3://b/../x')),
      /is not an S3 bucket url/,
    );
    assert.match(
      configError(() => resolve('model_repository=s3://bucket\nmodel_repository_endpoint=minio:9000')),
      /model_repository_endpoint: "minio:9000" is not an http\(s\) URL/,
    );
    assert.match(
      configError(() => resolve('model_repository=s3://bucket\nmodel_cache=off')),
      /needs the self-managed cache/,
    );
  });
});
