import assert from 'node:assert/strict';
import { localAwsEnv } from '../helpers/aws-endpoint';
import { runNodeScript } from '../../harness/run-node-script';
import { FakeSageMaker } from './fake-sagemaker';

const kImage = '123456789012.dkr.ecr.us-east-1.amazonaws.com/sagemaker-mme-node:1';
const kRole = 'arn:aws:iam::123456789012:role/MmeRole';
const kNameOf = /^ep-\d{8}-\d{6}$/;

describe('npm run deploy:sagemaker (real SDK against a local SageMaker API)', () => {
  let fake: FakeSageMaker;
  beforeEach(async () => {
    fake = await FakeSageMaker.start();
  });
  afterEach(() => fake.close());

  const deploy = (...args: string[]) =>
    runNodeScript(
      'sagemaker/deploy',
      ['--endpoint', 'ep', '--poll-seconds', '0', ...args],
      localAwsEnv({ SAGEMAKER: fake.url }),
    );
  const fullArgs = [
    '--image',
    kImage,
    '--role',
    kRole,
    '--bucket',
    'my-bucket',
    '--prefix',
    '/mme/models/',
    '--instance-type',
    'ml.c5.xlarge',
    '--instance-count',
    '2',
  ];

  it('creates a MultiModel model, its endpoint config and the endpoint, and waits for InService', async () => {
    const run = await deploy(...fullArgs, '--env', 'MMS_DEFAULT_WORKERS_PER_MODEL=2', '--env', 'A=b=c');
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(fake.protocolErrors, []);
    assert.deepEqual(fake.operations(), [
      'DescribeEndpoint',
      'CreateModel',
      'CreateEndpointConfig',
      'CreateEndpoint',
      'DescribeEndpoint',
      'DescribeEndpoint',
    ]);
    const model = fake.input('CreateModel');
    const name = String(model.ModelName);
    assert.match(name, kNameOf);
    assert.deepEqual(model, {
      ModelName: name,
      ExecutionRoleArn: kRole,
      PrimaryContainer: {
        Image: kImage,
        Mode: 'MultiModel',
        ModelDataUrl: 's3://my-bucket/mme/models/',
        Environment: { MMS_DEFAULT_WORKERS_PER_MODEL: '2', A: 'b=c' },
      },
    });
    assert.deepEqual(fake.input('CreateEndpointConfig'), {
      EndpointConfigName: name,
      ProductionVariants: [
        { VariantName: 'AllTraffic', ModelName: name, InstanceType: 'ml.c5.xlarge', InitialInstanceCount: 2 },
      ],
    });
    assert.deepEqual(fake.input('CreateEndpoint'), { EndpointName: 'ep', EndpointConfigName: name });
    assert.match(run.stdout, /endpoint ep: Creating \(\d+ s\)\nendpoint ep: InService \(\d+ s\)/);
    assert.equal(fake.endpoints.get('ep')?.status, 'InService');
  });

  it('updates an existing endpoint to a new model and config, then deletes the old ones', async () => {
    fake.seed('ep', 'ep-old');
    const run = await deploy(...fullArgs);
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(fake.operations(), [
      'DescribeEndpoint',
      'CreateModel',
      'CreateEndpointConfig',
      'DescribeEndpointConfig',
      'UpdateEndpoint',
      'DescribeEndpoint',
      'DescribeEndpoint',
      'DeleteEndpointConfig',
      'DeleteModel',
    ]);
    const name = String(fake.input('CreateModel').ModelName);
    assert.deepEqual(fake.input('UpdateEndpoint'), { EndpointName: 'ep', EndpointConfigName: name });
    assert.deepEqual(fake.input('DeleteEndpointConfig'), { EndpointConfigName: 'ep-old' });
    assert.deepEqual(fake.input('DeleteModel'), { ModelName: 'ep-old' });
    assert.deepEqual([...fake.models.keys()], [name]);
    assert.match(run.stdout, /Updating[^]*InService/);
  });

  it('deletes the endpoint, its config and its model', async () => {
    fake.seed('ep', 'ep-old');
    const run = await deploy('--delete');
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(fake.calls, [
      { operation: 'DescribeEndpoint', input: { EndpointName: 'ep' } },
      { operation: 'DescribeEndpointConfig', input: { EndpointConfigName: 'ep-old' } },
      { operation: 'DeleteEndpoint', input: { EndpointName: 'ep' } },
      { operation: 'DeleteEndpointConfig', input: { EndpointConfigName: 'ep-old' } },
      { operation: 'DeleteModel', input: { ModelName: 'ep-old' } },
    ]);
    assert.equal(fake.endpoints.size + fake.configs.size + fake.models.size, 0);
  });

  it("reports a failed endpoint with SageMaker's reason and exits 1", async () => {
    fake.failWith = 'The primary container for production variant AllTraffic did not pass the ping health check.';
    const run = await deploy(...fullArgs);
    assert.equal(run.code, 1);
    assert.match(
      run.stderr,
      /endpoint ep failed: The primary container .* did not pass the ping health check\. .*--delete/,
    );
  });

  it('refuses to update an endpoint that is not InService, saying what to do', async () => {
    fake.seed('ep', 'ep-old');
    fake.endpoints.get('ep')!.status = 'Updating';
    const run = await deploy(...fullArgs);
    assert.equal(run.code, 1);
    assert.match(run.stderr, /endpoint ep is Updating; .*Wait until it is InService/);
    assert.deepEqual(fake.operations(), ['DescribeEndpoint']);
  });

  it('says which flag is missing or wrong before calling SageMaker', async () => {
    const cases: [string[], RegExp][] = [
      [
        fullArgs.filter((a, i) => a !== '--image' && fullArgs[i - 1] !== '--image'),
        /--image is required: the ECR image URI/,
      ],
      [[...fullArgs.slice(0, -1), 'two'], /--instance-count must be a whole number >= 1, got "two"/],
      [['--bucket', 's3://my-bucket', ...fullArgs], /--bucket is given twice/],
      [
        fullArgs.map((a) => (a === 'my-bucket' ? 's3://my-bucket' : a)),
        /--bucket "s3:\/\/my-bucket" is not an S3 bucket name/,
      ],
      [[...fullArgs, '--instances', '3'], /unknown option --instances/],
      [[...fullArgs, '--env', 'NOEQUALS'], /--env "NOEQUALS" must be KEY=VALUE/],
    ];
    for (const [args, message] of cases) {
      const run = await deploy(...args);
      assert.equal(run.code, 2, `${args.join(' ')}: ${run.stderr}`);
      assert.match(run.stderr, message);
      assert.match(run.stderr, /Usage:\n {2}npm run deploy:sagemaker/);
    }
    assert.deepEqual(fake.calls, []);
  });

  it('deleting an endpoint that does not exist names the flags to check', async () => {
    const run = await deploy('--delete');
    assert.equal(run.code, 1);
    assert.match(run.stderr, /endpoint ep does not exist .*check --endpoint and --region/);
  });
});
