/** The model repository (S3) that on-demand loads download from, and its disk cache. */
import { atLeast, int, num, secondsAboveZero, str, url, resolverRead, type KeySpec } from './kinds';

export const kRepositoryKeys = resolverRead({
  model_repository: str(null, 's3://my-bucket/models', {
    doc: "Self-managed mode only: s3://bucket[/prefix] that an on-demand load of model X reads when X is not in model_store: <prefix>/X/ (a model directory), else <prefix>/X.tar.gz or X.tgz, downloaded into the disk cache (model_cache_dir). Credentials, region and endpoint come from the AWS SDK's default chain (env, IRSA / web identity, instance profile). Refused with SAGEMAKER_MULTI_MODEL=true, where the platform downloads. See docs/model-repository.md.",
  }),
  model_repository_endpoint: url(null, 'http://minio:9000', {
    doc: 'Endpoint URL of an S3-compatible store (MinIO, Ceph, R2), addressed path-style; unset = AWS S3 (or AWS_ENDPOINT_URL_S3).',
  }),
  model_repository_ttl: num('300', atLeast(0), {
    doc: 'Seconds a model in the disk cache is used without asking the repository whether it changed; after that its next load revalidates it (If-None-Match, or a listing for a directory) and downloads it again if it did. A loaded model keeps serving until it is unloaded. 0 = revalidate on every load.',
  }),
  model_repository_timeout: num('30', secondsAboveZero, {
    doc: 'Seconds the repository may stay silent (no answer, or no bytes of a download in progress) before the load fails with 504.',
  }),
  max_concurrent_downloads: int('2', atLeast(1), {
    doc: 'Repository downloads that may run at once; more wait their turn. Each streams to disk, so memory does not grow with model size.',
  }),
  model_cache_dir: str(null, '/var/cache/mme-models', {
    doc: 'Disk cache of models downloaded from model_repository; survives restarts (a half-finished download never does). Unset = mme-model-cache under the temp directory.',
  }),
  model_cache_disk_mb: int('10240', atLeast(1), {
    doc: "MiB the disk cache may hold; a download that needs room evicts the least recently used models that are not loaded (independently of memory eviction). Keep it below the volume's size limit (the emptyDir sizeLimit in deploy/k8s).",
  }),
} as const satisfies Record<string, KeySpec>);
