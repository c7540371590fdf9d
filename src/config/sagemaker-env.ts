/**
 * The SageMaker platform's variables, which win over every other source. They are read as keys
 * are, through a kind and range, so that a wrong value is refused with the same wording.
 */
import { configError } from '../errors';
import { withPort } from './address';
import type { Env } from './file-settings';
import { MAX_BODY_BYTES, type NamedKeySpec } from './keys';
import type { ListenAddress } from './types';
import { readValue } from './values';

const kVariables = {
  SAGEMAKER_BIND_TO_PORT: {
    kind: 'int',
    default: null,
    range: { allows: (n) => n >= 1 && n <= 65535, text: '1-65535' },
    example: '8080',
    doc: 'The port of both APIs.',
  },
  SAGEMAKER_MULTI_MODEL: { kind: 'bool', default: 'false', example: 'true', doc: 'A Multi-Model Endpoint.' },
  SAGEMAKER_MAX_PAYLOAD_IN_MB: {
    kind: 'number',
    default: null,
    range: { allows: (mb) => mb > 0 && mb * 2 ** 20 <= MAX_BODY_BYTES, text: '> 0, at most 1024' },
    example: '6',
    doc: 'The largest request body, in MiB as the SageMaker inference toolkit counts it.',
  },
} satisfies Record<string, Omit<NamedKeySpec, 'name'>>;

/** The variable's value, or null when it is unset or empty. */
function platformValue(name: keyof typeof kVariables, env: Env): number | boolean | null {
  const raw = env[name];
  if (raw === undefined || raw === '') return null;
  const value = readValue({ name, ...kVariables[name] }, { value: raw, from: null }, `environment variable ${name}`);
  return value as number | boolean;
}

/** SageMaker decides the port (multi-container endpoints, pipelines); the configured hosts stay. */
export function applyBindToPort(
  inference: ListenAddress,
  management: ListenAddress,
  env: Env,
): { inferenceAddress: ListenAddress; managementAddress: ListenAddress } {
  const port = platformValue('SAGEMAKER_BIND_TO_PORT', env) as number | null;
  if (port === null) return { inferenceAddress: inference, managementAddress: management };
  if (inference.scheme === 'unix') {
    throw configError(
      `environment variable SAGEMAKER_BIND_TO_PORT is ${port} but inference_address ${inference.raw} is a unix socket, which SageMaker cannot reach; use http://0.0.0.0:8080`,
    );
  }
  // A unix management socket stays where it is: it has no port and SageMaker never calls it there.
  return {
    inferenceAddress: withPort(inference, port),
    managementAddress: management.scheme === 'unix' ? management : withPort(management, port),
  };
}

export function multiModelFromEnv(env: Env): boolean {
  return platformValue('SAGEMAKER_MULTI_MODEL', env) === true;
}

/** SAGEMAKER_MAX_PAYLOAD_IN_MB in bytes (MiB, as the SageMaker inference toolkit converts it), or null. */
export function maxPayloadFromEnv(env: Env): number | null {
  const mb = platformValue('SAGEMAKER_MAX_PAYLOAD_IN_MB', env) as number | null;
  return mb === null ? null : Math.floor(mb * 2 ** 20);
}
