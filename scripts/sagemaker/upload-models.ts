/**
 * `npm run models:upload`: packs model directories as `<name>.tar.gz` (the directory's files at the
 * archive's root, as SageMaker extracts them to /opt/ml/models/<id>/model) and uploads each under the
 * endpoint's S3 prefix with the AWS SDK v3. A directory is checked the way the server checks it at
 * load time first, so a model that would fail on the endpoint fails here.
 */
import fs from 'node:fs';
import path from 'node:path';
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import * as tar from 'tar';
import { resolveModelDir } from '../../src/artifacts/model-dir';
import { Flags, runCli, UsageError } from '../cli-flags';
import { checkBucket, modelKey } from './s3-location';

export const USAGE = `Usage:
  npm run models:upload -- --bucket BUCKET --prefix PREFIX [--region REGION] MODEL_DIR...
  npm run models:upload -- --bucket BUCKET --prefix PREFIX --store DIR
      uploads each MODEL_DIR (or every model directory in the store DIR, e.g. model-store)
      as s3://BUCKET/PREFIX/<directory name>.tar.gz; invoke it with TargetModel <name>.tar.gz.`;

const FLAGS = { bucket: 'string', prefix: 'string', region: 'string', store: 'string' } as const;

/** The directory's name is the model's: its TargetModel is `<name>.tar.gz`. */
const modelName = (dir: string) => path.basename(path.resolve(dir));

/** Every file under dir, relative; links and special files are refused because the server refuses them in archives. */
function regularFiles(dir: string, rel = ''): string[] {
  return fs.readdirSync(path.join(dir, rel), { withFileTypes: true }).flatMap((e) => {
    const child = path.posix.join(rel, e.name);
    if (e.isDirectory()) return regularFiles(dir, child);
    if (e.isFile()) return [child];
    throw new Error(
      `${path.join(dir, child)} is a link or special file; the server accepts archives of plain files and directories only. Replace it with a copy.`,
    );
  });
}

/** The .tar.gz of a model directory, files at the root, owners and modes normalised. */
export async function packModel(dir: string): Promise<Buffer> {
  if (!fs.statSync(dir, { throwIfNoEntry: false })?.isDirectory()) throw new UsageError(`${dir} is not a directory`);
  await resolveModelDir(dir, dir);
  const chunks: Buffer[] = [];
  for await (const chunk of tar.create({ gzip: true, cwd: dir, portable: true }, regularFiles(dir))) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/** The model directories of a store: every subdirectory (plain files beside them, e.g. a README, are skipped). */
function storeDirs(store: string): string[] {
  if (!fs.statSync(store, { throwIfNoEntry: false })?.isDirectory())
    throw new UsageError(`--store ${store} is not a directory`);
  const dirs = fs
    .readdirSync(store, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => path.join(store, e.name))
    .sort();
  if (dirs.length === 0) throw new UsageError(`--store ${store} holds no model directories`);
  return dirs;
}

async function main(argv: string[]): Promise<void> {
  const flags = Flags.parse(argv, FLAGS);
  const bucket = checkBucket(flags.required('bucket', "the S3 bucket of the endpoint's ModelDataUrl"));
  const prefix = flags.required('prefix', "the S3 prefix of the endpoint's ModelDataUrl");
  const store = flags.string('store');
  if (store !== undefined && flags.positionals.length > 0)
    throw new UsageError('give either --store or model directories, not both');
  const dirs = store !== undefined ? storeDirs(store) : flags.positionals;
  if (dirs.length === 0) throw new UsageError('name at least one model directory (or --store DIR)');
  const names = dirs.map(modelName);
  const s3 = new S3Client({ region: flags.string('region') });
  for (const [i, dir] of dirs.entries()) {
    const body = await packModel(dir);
    const key = modelKey(prefix, names[i]);
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body, ContentType: 'application/gzip' }));
    console.log(`uploaded s3://${bucket}/${key} (${body.length} bytes): TargetModel ${names[i]}.tar.gz`);
  }
}

if (require.main === module) runCli(USAGE, main);
