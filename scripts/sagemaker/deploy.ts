/**
 * `npm run deploy:sagemaker`: puts this image on a SageMaker multi-model endpoint with the AWS SDK v3,
 * or updates or deletes one. Every deployment gets a fresh Model and EndpointConfig (both immutable in
 * SageMaker), named after the endpoint and the time; an update switches the endpoint to them and then
 * deletes the ones it replaced, so nothing piles up.
 */
import {
  CreateEndpointCommand,
  CreateEndpointConfigCommand,
  CreateModelCommand,
  DeleteEndpointCommand,
  DeleteEndpointConfigCommand,
  DeleteModelCommand,
  DescribeEndpointCommand,
  DescribeEndpointConfigCommand,
  SageMakerClient,
  UpdateEndpointCommand,
  type DescribeEndpointCommandOutput,
} from '@aws-sdk/client-sagemaker';
import { Flags, runCli, UsageError } from '../cli-flags';
import { modelDataUrl } from './s3-location';

const DEFAULT_ENDPOINT = 'sagemaker-mme-node';

export const USAGE = `Usage:
  npm run deploy:sagemaker -- --image URI --role ARN --bucket BUCKET --prefix PREFIX
                              --instance-type TYPE --instance-count N [--endpoint NAME]
                              [--env KEY=VALUE]... [--region REGION] [--poll-seconds S]
      creates the endpoint (Model with Mode MultiModel and ModelDataUrl s3://BUCKET/PREFIX/,
      EndpointConfig, Endpoint), or updates it when it exists, and waits until it is InService.
  npm run deploy:sagemaker -- --delete [--endpoint NAME] [--region REGION]
      deletes the endpoint, its endpoint configuration and its models.

--endpoint defaults to ${DEFAULT_ENDPOINT}. --env sets the container's environment, e.g.
--env MMS_DEFAULT_WORKERS_PER_MODEL=2. The region and credentials come from the AWS SDK's default
chain (AWS_REGION, AWS_PROFILE, ...) unless --region is given.`;

const FLAGS = {
  image: 'string',
  role: 'string',
  bucket: 'string',
  prefix: 'string',
  'instance-type': 'string',
  'instance-count': 'string',
  endpoint: 'string',
  env: 'list',
  region: 'string',
  'poll-seconds': 'string',
  delete: 'boolean',
} as const;

/** SageMaker's pattern for endpoint, config and model names. */
const NAME = /^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$/;
/** '-YYYYMMDD-HHMMSS' */
const STAMP_LENGTH = 16;

export interface DeploySpec {
  endpoint: string;
  image: string;
  role: string;
  modelDataUrl: string;
  instanceType: string;
  instanceCount: number;
  environment: Record<string, string>;
}

type Say = (line: string) => void;

/** Fresh Model and EndpointConfig names: the endpoint's (cut to leave room) plus the UTC time. */
export function resourceName(endpoint: string, now: Date): string {
  const stamp = now
    .toISOString()
    .replace(/[-:]/g, '')
    .replace('T', '-')
    .slice(0, STAMP_LENGTH - 1);
  return `${endpoint.slice(0, 63 - STAMP_LENGTH).replace(/-+$/, '')}-${stamp}`;
}

function endpointName(flags: Flags): string {
  const name = flags.string('endpoint') ?? DEFAULT_ENDPOINT;
  if (!NAME.test(name))
    throw new UsageError(
      `--endpoint ${JSON.stringify(name)} is not a SageMaker name: letters, digits and hyphens, at most 63, starting with a letter or digit`,
    );
  return name;
}

function environment(pairs: string[]): Record<string, string> {
  return Object.fromEntries(
    pairs.map((pair) => {
      const eq = pair.indexOf('=');
      if (eq < 1) throw new UsageError(`--env ${JSON.stringify(pair)} must be KEY=VALUE`);
      return [pair.slice(0, eq), pair.slice(eq + 1)];
    }),
  );
}

export function deploySpec(flags: Flags): DeploySpec {
  return {
    endpoint: endpointName(flags),
    image: flags.required(
      'image',
      'the ECR image URI, e.g. 123456789012.dkr.ecr.us-east-1.amazonaws.com/sagemaker-mme-node:latest',
    ),
    role: flags.required('role', 'the execution role ARN SageMaker assumes (see the README for its permissions)'),
    modelDataUrl: modelDataUrl(
      flags.required('bucket', 'the S3 bucket holding the models'),
      flags.required('prefix', 'the S3 prefix the model .tar.gz files are under'),
    ),
    instanceType: flags.required('instance-type', 'e.g. ml.c5.xlarge'),
    instanceCount: flags.int('instance-count', 1, 1),
    environment: environment(flags.list('env')),
  };
}

/** The endpoint's description, or null when it does not exist (SageMaker says so with a ValidationException). */
async function describe(sm: SageMakerClient, endpoint: string): Promise<DescribeEndpointCommandOutput | null> {
  try {
    return await sm.send(new DescribeEndpointCommand({ EndpointName: endpoint }));
  } catch (err) {
    if ((err as Error).name === 'ValidationException' && /could not find/i.test((err as Error).message)) return null;
    throw err;
  }
}

/** Polls until InService, printing each status change; Failed (or the endpoint vanishing) throws. */
async function waitInService(sm: SageMakerClient, endpoint: string, pollMs: number, say: Say): Promise<void> {
  const start = Date.now();
  let last = '';
  for (;;) {
    const d = await describe(sm, endpoint);
    if (d === null) throw new Error(`endpoint ${endpoint} disappeared while waiting for it`);
    const status = d.EndpointStatus ?? 'unknown';
    if (status !== last) say(`endpoint ${endpoint}: ${status} (${Math.round((Date.now() - start) / 1000)} s)`);
    last = status;
    if (status === 'InService') return;
    if (status === 'Failed')
      throw new Error(
        `endpoint ${endpoint} failed: ${(d.FailureReason ?? 'no reason given').replace(/\.$/, '')}. Fix the cause, then delete it (--delete) and deploy again.`,
      );
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}

async function createModelAndConfig(sm: SageMakerClient, spec: DeploySpec, name: string, say: Say): Promise<void> {
  await sm.send(
    new CreateModelCommand({
      ModelName: name,
      ExecutionRoleArn: spec.role,
      PrimaryContainer: {
        Image: spec.image,
        Mode: 'MultiModel',
        ModelDataUrl: spec.modelDataUrl,
        Environment: spec.environment,
      },
    }),
  );
  say(`created model ${name} (MultiModel, ${spec.modelDataUrl})`);
  await sm.send(
    new CreateEndpointConfigCommand({
      EndpointConfigName: name,
      ProductionVariants: [
        {
          VariantName: 'AllTraffic',
          ModelName: name,
          InstanceType: spec.instanceType as never,
          InitialInstanceCount: spec.instanceCount,
        },
      ],
    }),
  );
  say(`created endpoint config ${name} (${spec.instanceCount} × ${spec.instanceType})`);
}

/** The endpoint config an endpoint runs and the models its variants name. */
async function resourcesOf(sm: SageMakerClient, configName: string): Promise<{ config: string; models: string[] }> {
  const config = await sm.send(new DescribeEndpointConfigCommand({ EndpointConfigName: configName }));
  return {
    config: configName,
    models: (config.ProductionVariants ?? []).flatMap((v) => (v.ModelName ? [v.ModelName] : [])),
  };
}

async function deleteConfigAndModels(
  sm: SageMakerClient,
  old: { config: string; models: string[] },
  say: Say,
): Promise<void> {
  await sm.send(new DeleteEndpointConfigCommand({ EndpointConfigName: old.config }));
  say(`deleted endpoint config ${old.config}`);
  for (const model of old.models) {
    await sm.send(new DeleteModelCommand({ ModelName: model }));
    say(`deleted model ${model}`);
  }
}

/** Creates the endpoint, or moves an existing one to a new model and config. */
export async function deploy(
  sm: SageMakerClient,
  spec: DeploySpec,
  opts: { pollMs: number; now: Date; say: Say },
): Promise<void> {
  const { say } = opts;
  const existing = await describe(sm, spec.endpoint);
  if (existing && existing.EndpointStatus !== 'InService') {
    throw new Error(
      `endpoint ${spec.endpoint} is ${existing.EndpointStatus}; SageMaker updates only an InService endpoint. ` +
        (existing.EndpointStatus === 'Failed'
          ? 'Delete it (--delete) and deploy again.'
          : 'Wait until it is InService and run this again.'),
    );
  }
  const name = resourceName(spec.endpoint, opts.now);
  await createModelAndConfig(sm, spec, name, say);
  if (!existing) {
    await sm.send(new CreateEndpointCommand({ EndpointName: spec.endpoint, EndpointConfigName: name }));
    say(`creating endpoint ${spec.endpoint}`);
    await waitInService(sm, spec.endpoint, opts.pollMs, say);
    return;
  }
  const old = await resourcesOf(sm, existing.EndpointConfigName!);
  await sm.send(new UpdateEndpointCommand({ EndpointName: spec.endpoint, EndpointConfigName: name }));
  say(`updating endpoint ${spec.endpoint} from ${old.config} to ${name}`);
  await waitInService(sm, spec.endpoint, opts.pollMs, say);
  await deleteConfigAndModels(sm, old, say);
}

/** Deletes the endpoint, then the endpoint config and models it ran. */
export async function remove(sm: SageMakerClient, endpoint: string, say: Say): Promise<void> {
  const existing = await describe(sm, endpoint);
  if (!existing)
    throw new Error(`endpoint ${endpoint} does not exist in this account and region (check --endpoint and --region)`);
  const old = await resourcesOf(sm, existing.EndpointConfigName!);
  await sm.send(new DeleteEndpointCommand({ EndpointName: endpoint }));
  say(`deleted endpoint ${endpoint}`);
  await deleteConfigAndModels(sm, old, say);
}

async function main(argv: string[]): Promise<void> {
  const flags = Flags.parse(argv, FLAGS);
  if (flags.positionals.length > 0) throw new UsageError(`unexpected argument ${flags.positionals[0]}`);
  const sm = new SageMakerClient({ region: flags.string('region') });
  const say: Say = (line) => console.log(line);
  if (flags.has('delete')) return remove(sm, endpointName(flags), say);
  const spec = deploySpec(flags);
  await deploy(sm, spec, { pollMs: flags.number('poll-seconds', 15, 0) * 1000, now: new Date(), say });
  say(
    `endpoint ${spec.endpoint} is InService; invoke it with: npm run invoke:sagemaker -- --endpoint ${spec.endpoint} --target-model MODEL.tar.gz --body JSON`,
  );
}

if (require.main === module) runCli(USAGE, main);
