/** Where models live in S3: one prefix, one `<name>.tar.gz` per model, as a multi-model endpoint reads them. */
import { UsageError } from '../cli-flags';

/** S3's bucket-name rules, enough to catch a URL or a path passed by mistake. */
const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

export function checkBucket(bucket: string): string {
  if (!BUCKET.test(bucket))
    throw new UsageError(
      `--bucket ${JSON.stringify(bucket)} is not an S3 bucket name (3–63 lower-case letters, digits, dots, hyphens; no s3:// prefix)`,
    );
  return bucket;
}

/** The prefix without leading or trailing slashes; an MME needs one (its ModelDataUrl is a folder). */
function cleanPrefix(prefix: string): string {
  const clean = prefix.replace(/^\/+|\/+$/g, '');
  if (clean === '') throw new UsageError('--prefix must name a folder in the bucket, e.g. mme-models');
  return clean;
}

/** The ModelDataUrl of a MultiModel container: the prefix, with the trailing slash SageMaker expects. */
export function modelDataUrl(bucket: string, prefix: string): string {
  return `s3://${checkBucket(bucket)}/${cleanPrefix(prefix)}/`;
}

/** A model's object key; its TargetModel is the part after the prefix. */
export function modelKey(prefix: string, model: string): string {
  return `${cleanPrefix(prefix)}/${model}.tar.gz`;
}
