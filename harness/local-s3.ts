/**
 * A real S3-compatible server (s3rver, on port 0, storing in a temp directory) and the real AWS
 * SDK client to fill it: what model_repository talks to in these tests.
 */
import fs from 'node:fs';
import type { Readable } from 'node:stream';
import { DeleteObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import S3rver from 's3rver';
import { tempDir } from './test-server';

export const kBucket = 'models';

/** s3rver's one built-in key pair; the SDK's default chain reads it from the environment. */
export const kS3Env = {
  AWS_ACCESS_KEY_ID: 'S3RVER',
  AWS_SECRET_ACCESS_KEY: 'S3RVER',
  AWS_REGION: 'us-east-1',
  AWS_EC2_METADATA_DISABLED: 'true',
} as const;

export class LocalS3 {
  readonly client: S3Client;

  private constructor(
    private readonly server: S3rver,
    readonly url: string,
    readonly dir: string,
  ) {
    this.client = new S3Client({
      endpoint: url,
      forcePathStyle: true,
      region: 'us-east-1',
      credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    });
  }

  static async start(): Promise<LocalS3> {
    const dir = tempDir('mme-s3-');
    const server = new S3rver({
      address: '127.0.0.1',
      port: 0,
      silent: true,
      directory: dir,
      configureBuckets: [{ name: kBucket }],
    });
    const { port } = await server.run();
    return new LocalS3(server, `http://127.0.0.1:${port}`, dir);
  }

  /** The model_repository lines for a server reading `prefix` of this store. */
  properties(prefix = 'repo', extra = ''): string {
    return `model_repository=s3://${kBucket}/${prefix}\nmodel_repository_endpoint=${this.url}\n${extra}`;
  }

  async put(key: string, body: Uint8Array | string | Readable, length?: number): Promise<void> {
    await this.client.send(
      new PutObjectCommand({
        Bucket: kBucket,
        Key: key,
        Body: body,
        ...(length === undefined ? {} : { ContentLength: length }),
      }),
    );
  }

  async putFile(key: string, file: string): Promise<void> {
    await this.put(key, fs.createReadStream(file), fs.statSync(file).size);
  }

  /** `<prefix>/<name>/model.onnx` and any extra files beside it. */
  async putModelDir(
    prefix: string,
    name: string,
    onnx: Uint8Array,
    extra: Record<string, string | Uint8Array> = {},
  ): Promise<void> {
    await this.put(`${prefix}/${name}/model.onnx`, onnx);
    for (const [rel, body] of Object.entries(extra)) await this.put(`${prefix}/${name}/${rel}`, body);
  }

  async delete(key: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: kBucket, Key: key }));
  }

  async close(): Promise<void> {
    this.client.destroy();
    await this.server.close();
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Sets `env` in this process (the SDK's default chain reads process.env) until the returned function runs. */
export function setEnv(env: Readonly<Record<string, string>>): () => void {
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  Object.assign(process.env, env);
  return () => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  };
}
