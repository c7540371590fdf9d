/**
 * A local stand-in for the SageMaker control plane as @aws-sdk/client-sagemaker calls it: AWS JSON
 * 1.1 (POST /, X-Amz-Target SageMaker.<Operation>), SigV4-signed. It keeps models, endpoint configs
 * and endpoints, answers a missing endpoint with SageMaker's ValidationException "Could not find
 * endpoint", and moves an endpoint to InService (or Failed) after a set number of describes.
 */
import type http from 'node:http';
import { AwsServiceFake, LocalAwsEndpoint, replyAwsJson, type AwsRequest } from '../helpers/aws-endpoint';

export interface Call {
  operation: string;
  input: Record<string, unknown>;
}

interface Endpoint {
  config: string;
  status: string;
  /** Describes left before the endpoint settles. */
  pending: number;
  failureReason?: string;
}

const arn = (kind: string, name: string) => `arn:aws:sagemaker:us-east-1:123456789012:${kind}/${name.toLowerCase()}`;
const kEpoch = 1_700_000_000;

export class FakeSageMaker extends AwsServiceFake {
  readonly calls: Call[] = [];
  readonly protocolErrors: string[] = [];
  readonly models = new Map<string, Record<string, unknown>>();
  readonly configs = new Map<string, Record<string, unknown>>();
  readonly endpoints = new Map<string, Endpoint>();
  /** How many describes show Creating/Updating before the endpoint settles. */
  describesBeforeReady = 1;
  /** When set, an endpoint settles as Failed with this reason instead of InService. */
  failWith: string | null = null;

  private constructor(endpoint: LocalAwsEndpoint) {
    super(endpoint);
  }

  static start(): Promise<FakeSageMaker> {
    return AwsServiceFake.startOn((endpoint) => new FakeSageMaker(endpoint));
  }

  /** An endpoint that already runs `name`'s model and config, InService. */
  seed(endpoint: string, name: string, variant: Record<string, unknown> = {}): void {
    this.models.set(name, { ModelName: name });
    this.configs.set(name, {
      EndpointConfigName: name,
      ProductionVariants: [{ VariantName: 'AllTraffic', ModelName: name, ...variant }],
    });
    this.endpoints.set(endpoint, { config: name, status: 'InService', pending: 0 });
  }

  operations(): string[] {
    return this.calls.map((c) => c.operation);
  }

  input(operation: string): Record<string, unknown> {
    const call = this.calls.find((c) => c.operation === operation);
    if (!call) throw new Error(`no ${operation} among ${this.operations().join(', ')}`);
    return call.input;
  }

  protected handle(req: AwsRequest, res: http.ServerResponse): void {
    const target = String(req.headers['x-amz-target']);
    const problem =
      req.method !== 'POST' || req.url !== '/'
        ? `expected POST /, got ${req.method} ${req.url}`
        : req.headers['content-type'] !== 'application/x-amz-json-1.1'
          ? `content-type ${req.headers['content-type']}`
          : !target.startsWith('SageMaker.')
            ? `x-amz-target ${target}`
            : req.accessKeyId === ''
              ? 'not SigV4-signed'
              : null;
    if (problem) {
      this.protocolErrors.push(problem);
      return replyAwsJson(res, '1.1', 400, { __type: 'UnknownOperationException', message: problem });
    }
    const operation = target.slice('SageMaker.'.length);
    const input = JSON.parse(req.body.toString('utf8') || '{}') as Record<string, unknown>;
    this.calls.push({ operation, input });
    try {
      replyAwsJson(res, '1.1', 200, this.run(operation, input));
    } catch (err) {
      replyAwsJson(res, '1.1', 400, { __type: 'ValidationException', message: (err as Error).message });
    }
  }

  private run(op: string, input: Record<string, unknown>): unknown {
    const name = (key: string) => String(input[key]);
    const create = (store: Map<string, Record<string, unknown>>, key: string, kind: string) => {
      if (store.has(name(key))) throw new Error(`Cannot create already existing ${kind} "${arn(kind, name(key))}".`);
      store.set(name(key), input);
      return arn(kind, name(key));
    };
    const endpoint = () => {
      const e = this.endpoints.get(name('EndpointName'));
      if (!e) throw new Error(`Could not find endpoint "${arn('endpoint', name('EndpointName'))}".`);
      return e;
    };
    switch (op) {
      case 'CreateModel':
        return { ModelArn: create(this.models, 'ModelName', 'model') };
      case 'CreateEndpointConfig':
        return { EndpointConfigArn: create(this.configs, 'EndpointConfigName', 'endpoint-config') };
      case 'CreateEndpoint':
        if (this.endpoints.has(name('EndpointName')))
          throw new Error(`Cannot create already existing endpoint "${arn('endpoint', name('EndpointName'))}".`);
        this.endpoints.set(name('EndpointName'), {
          config: name('EndpointConfigName'),
          status: 'Creating',
          pending: this.describesBeforeReady,
        });
        return { EndpointArn: arn('endpoint', name('EndpointName')) };
      case 'UpdateEndpoint':
        Object.assign(endpoint(), {
          config: name('EndpointConfigName'),
          status: 'Updating',
          pending: this.describesBeforeReady,
        });
        return { EndpointArn: arn('endpoint', name('EndpointName')) };
      case 'DescribeEndpoint': {
        const e = endpoint();
        const described = {
          EndpointName: name('EndpointName'),
          EndpointArn: arn('endpoint', name('EndpointName')),
          EndpointConfigName: e.config,
          EndpointStatus: e.status,
          FailureReason: e.failureReason,
          CreationTime: kEpoch,
          LastModifiedTime: kEpoch,
        };
        if (--e.pending <= 0 && e.status !== 'InService' && e.status !== 'Failed') {
          Object.assign(
            e,
            this.failWith ? { status: 'Failed', failureReason: this.failWith } : { status: 'InService' },
          );
        }
        return described;
      }
      case 'DescribeEndpointConfig': {
        const c = this.configs.get(name('EndpointConfigName'));
        if (!c)
          throw new Error(
            `Could not find endpoint configuration "${arn('endpoint-config', name('EndpointConfigName'))}".`,
          );
        return { ...c, EndpointConfigArn: arn('endpoint-config', name('EndpointConfigName')), CreationTime: kEpoch };
      }
      case 'DeleteEndpoint':
        endpoint();
        this.endpoints.delete(name('EndpointName'));
        return {};
      case 'DeleteEndpointConfig':
        if (!this.configs.delete(name('EndpointConfigName')))
          throw new Error(`Could not find endpoint configuration "${name('EndpointConfigName')}".`);
        return {};
      case 'DeleteModel':
        if (!this.models.delete(name('ModelName')))
          throw new Error(`Could not find model "${arn('model', name('ModelName'))}".`);
        return {};
      default:
        throw new Error(`the fake does not implement ${op}`);
    }
  }
}
