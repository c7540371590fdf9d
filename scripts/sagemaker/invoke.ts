/**
 * `npm run invoke:sagemaker`: one InvokeEndpoint call on a multi-model endpoint with the AWS SDK v3,
 * naming the model with TargetModel (sent as X-Amzn-SageMaker-Target-Model). The response body goes
 * to stdout, so it can be piped; what SageMaker says about the call goes to stderr.
 */
import fs from 'node:fs';
import { InvokeEndpointCommand, SageMakerRuntimeClient } from '@aws-sdk/client-sagemaker-runtime';
import { Flags, runCli, UsageError } from '../cli-flags';

export const USAGE = `Usage:
  npm run invoke:sagemaker -- --endpoint NAME --target-model MODEL.tar.gz (--body TEXT | --body @FILE)
                              [--content-type TYPE] [--accept TYPE] [--region REGION]
      TargetModel is the model's key relative to the endpoint's S3 prefix (what models:upload printed).
      --content-type defaults to application/json.`;

const FLAGS = {
  endpoint: 'string',
  'target-model': 'string',
  body: 'string',
  'content-type': 'string',
  accept: 'string',
  region: 'string',
} as const;

/** `@file` reads the file, as curl's -d does; anything else is the body itself. */
function body(flag: string): Buffer {
  if (!flag.startsWith('@')) return Buffer.from(flag);
  try {
    return fs.readFileSync(flag.slice(1));
  } catch (err) {
    throw new UsageError(`--body ${flag}: cannot read ${flag.slice(1)} (${(err as NodeJS.ErrnoException).code})`);
  }
}

async function main(argv: string[]): Promise<void> {
  const flags = Flags.parse(argv, FLAGS);
  if (flags.positionals.length > 0) throw new UsageError(`unexpected argument ${flags.positionals[0]}`);
  const runtime = new SageMakerRuntimeClient({ region: flags.string('region') });
  const res = await runtime.send(
    new InvokeEndpointCommand({
      EndpointName: flags.required('endpoint', "the endpoint's name"),
      TargetModel: flags.required('target-model', 'the model to run, e.g. mlp.tar.gz'),
      Body: body(flags.required('body', 'the request body, or @FILE')),
      ContentType: flags.string('content-type') ?? 'application/json',
      Accept: flags.string('accept'),
    }),
  );
  process.stderr.write(
    `${res.InvokedProductionVariant ?? 'unknown variant'}: ${res.ContentType ?? 'no content type'}\n`,
  );
  process.stdout.write(Buffer.from(res.Body ?? new Uint8Array()));
}

if (require.main === module) runCli(USAGE, main);
