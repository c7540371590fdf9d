import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createMetrics } from '../../src/metrics';
import { configWith, invoke, request } from './helpers';
import { waitFor } from '../../harness/process-probes';

/** The spec's units (CloudWatch_Embedded_Metric_Format_Specification, JSON schema's MetricUnit pattern). */
const kUnits = new Set([
  'Seconds',
  'Microseconds',
  'Milliseconds',
  'Bytes',
  'Kilobytes',
  'Megabytes',
  'Gigabytes',
  'Terabytes',
  'Bits',
  'Kilobits',
  'Megabits',
  'Gigabits',
  'Terabits',
  'Percent',
  'Count',
  'Bytes/Second',
  'Kilobytes/Second',
  'Megabytes/Second',
  'Gigabytes/Second',
  'Terabytes/Second',
  'Bits/Second',
  'Kilobits/Second',
  'Megabits/Second',
  'Gigabits/Second',
  'Terabits/Second',
  'Count/Second',
  'None',
]);

/** Every rule of the EMF specification (reference §2.3) that a document can break; [] = valid. */
function emfProblems(line: string): string[] {
  const problems: string[] = [];
  const check = (ok: unknown, problem: string) => {
    if (!ok) problems.push(problem);
  };
  if (Buffer.byteLength(line) > 256 * 1024) problems.push('over 256 KB');
  let doc: Record<string, unknown>;
  try {
    doc = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return ['not a JSON document with nothing before or after it'];
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) return ['root is not an object'];
  const aws = doc._aws as { Timestamp?: unknown; CloudWatchMetrics?: unknown } | undefined;
  if (typeof aws !== 'object' || aws === null) return ['no _aws object'];
  check(
    Number.isInteger(aws.Timestamp) && (aws.Timestamp as number) >= 0,
    '_aws.Timestamp is not integer milliseconds',
  );
  if (!Array.isArray(aws.CloudWatchMetrics)) return [...problems, '_aws.CloudWatchMetrics is not an array'];
  for (const directive of aws.CloudWatchMetrics as Record<string, unknown>[]) {
    const ns = directive.Namespace;
    check(
      typeof ns === 'string' && ns.length >= 1 && ns.length <= 255,
      'Namespace is not a string of 1-255 characters',
    );
    const dims = directive.Dimensions;
    check(Array.isArray(dims) && dims.length >= 1, 'Dimensions is not a non-empty array of DimensionSets');
    for (const set of Array.isArray(dims) ? dims : []) {
      check(Array.isArray(set) && set.length <= 9, 'a DimensionSet is not an array of at most 9 keys');
      for (const key of Array.isArray(set) ? set : []) {
        check(
          typeof key === 'string' && key.length >= 1 && key.length <= 255,
          `dimension key ${String(key)} is not a 1-255 character string`,
        );
        check(typeof doc[key] === 'string', `dimension ${String(key)} has no string target member on the root`);
      }
    }
    const metrics = directive.Metrics;
    check(Array.isArray(metrics) && metrics.length <= 100, 'Metrics is not an array of at most 100 MetricDefinitions');
    for (const m of Array.isArray(metrics) ? (metrics as Record<string, unknown>[]) : []) {
      const name = m.Name;
      check(typeof name === 'string' && name.length >= 1 && name.length <= 255, 'a MetricDefinition has no Name');
      check(m.Unit === undefined || kUnits.has(m.Unit as string), `unit ${String(m.Unit)} is not a CloudWatch unit`);
      const target = doc[name as string];
      const numeric =
        (typeof target === 'number' && Number.isFinite(target)) ||
        (Array.isArray(target) && target.length <= 100 && target.every((v) => typeof v === 'number'));
      check(numeric, `metric ${String(name)} has no numeric target member on the root`);
    }
  }
  return problems;
}

function tempFile(): string {
  return path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'mme-emf-')), 'metrics.log');
}

describe('metrics: CloudWatch Embedded Metric Format', () => {
  it('the validator catches what the spec forbids', () => {
    assert.deepEqual(
      emfProblems(
        '{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"n","Dimensions":[[]],"Metrics":[{"Name":"x","Unit":"None"}]}]},"x":1}',
      ),
      [],
    );
    assert.ok(emfProblems('x {"_aws":{}}').length > 0);
    assert.ok(emfProblems('{"_aws":{"Timestamp":1.5,"CloudWatchMetrics":[]}}').length > 0);
    assert.ok(
      emfProblems(
        '{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"n","Dimensions":[["d"]],"Metrics":[{"Name":"x","Unit":"Furlongs"}]}]},"x":"1"}',
      ).length === 3,
    );
  });

  it('writes one valid document per interval and dimension set to a file', async () => {
    const file = tempFile();
    const recorder = createMetrics(
      configWith(
        `metrics_emf=${file}`,
        'metrics_endpoint_name=ep',
        'metrics_variant_name=AllTraffic',
        'metrics_per_model_dimension=true',
        'metrics_namespace=Test/MME',
      ),
      { log: () => undefined, now: () => 1_700_000_000_000 },
    );
    recorder.start();
    await new Promise((resolve) => setTimeout(resolve, 20)); // so the CPU rate has an interval to divide by
    for (let i = 0; i < 3; i++) request(recorder, 'a');
    request(recorder, 'b', false, { status: 500 });
    recorder.loadedModelCount(2);
    await recorder.flush();
    recorder.invocation(invoke('a'));
    await recorder.close();

    const lines = fs.readFileSync(file, 'utf8').trimEnd().split('\n');
    for (const line of lines) assert.deepEqual(emfProblems(line), [], line);
    const docs = lines.map(
      (l) =>
        JSON.parse(l) as Record<string, unknown> & {
          _aws: {
            Timestamp: number;
            CloudWatchMetrics: {
              Namespace: string;
              Dimensions: string[][];
              Metrics: { Name: string; Unit: string }[];
            }[];
          };
        },
    );
    assert.equal(docs.length, 3 + 2, 'interval 1: endpoint, a, b; interval 2: endpoint, a');

    const [endpoint, a, b] = docs;
    const directive = endpoint._aws.CloudWatchMetrics[0];
    assert.equal(endpoint._aws.Timestamp, 1_700_000_000_000);
    assert.equal(directive.Namespace, 'Test/MME');
    assert.deepEqual(directive.Dimensions, [['EndpointName', 'VariantName']]);
    assert.equal(endpoint.EndpointName, 'ep');
    assert.equal(endpoint.Invocations, 4);
    assert.equal(endpoint.Invocation5XXErrors, 1);
    assert.equal(endpoint.ModelCacheHit, 0.75, 'the hit ratio');
    assert.deepEqual((endpoint.Statistics as Record<string, unknown>).ModelCacheHit, {
      SampleCount: 4,
      Sum: 3,
      Minimum: 0,
      Maximum: 1,
    });
    assert.equal(endpoint.ModelLatency, 1000);
    assert.equal(endpoint.LoadedModelCount, 2);
    assert.ok(typeof endpoint.MemoryUtilization === 'number');
    assert.deepEqual(
      directive.Metrics.find((m) => m.Name === 'ModelLatency'),
      { Name: 'ModelLatency', Unit: 'Microseconds' },
    );
    assert.deepEqual(
      directive.Metrics.find((m) => m.Name === 'CPUUtilization'),
      { Name: 'CPUUtilization', Unit: 'Percent' },
    );

    assert.deepEqual(a._aws.CloudWatchMetrics[0].Dimensions, [['EndpointName', 'VariantName', 'ModelName']]);
    assert.equal(a.ModelName, 'a');
    assert.equal(a.ModelCacheHit, 1);
    assert.equal(a.MemoryUtilization, undefined, 'instance metrics only on the endpoint document');
    assert.equal(b.ModelName, 'b');
    assert.equal(b.ModelCacheHit, 0);
    assert.equal(docs[3].Invocations, 1, 'the second interval starts from zero');
  });

  it('leaves out the dimensions it does not know (an empty DimensionSet is valid)', async () => {
    const file = tempFile();
    const recorder = createMetrics(configWith(`metrics_emf=${file}`), { log: () => undefined });
    recorder.invocation(invoke('a'));
    await recorder.close();
    const [line] = fs.readFileSync(file, 'utf8').trimEnd().split('\n');
    assert.deepEqual(emfProblems(line), []);
    const doc = JSON.parse(line) as { _aws: { CloudWatchMetrics: { Namespace: string; Dimensions: string[][] }[] } };
    assert.deepEqual(doc._aws.CloudWatchMetrics[0].Dimensions, [[]]);
    assert.equal(doc._aws.CloudWatchMetrics[0].Namespace, 'SageMakerMME');
  });

  it('writes to stdout with metrics_emf=stdout', async () => {
    const written: string[] = [];
    const original = process.stdout.write.bind(process.stdout);
    const recorder = createMetrics(configWith('metrics_emf=stdout'), { log: () => undefined });
    process.stdout.write = (chunk: string) => {
      written.push(chunk);
      return true;
    };
    try {
      recorder.invocation(invoke('a'));
      await recorder.close();
    } finally {
      process.stdout.write = original;
    }
    assert.equal(written.length, 1);
    assert.ok(written[0].endsWith('\n'));
    assert.deepEqual(emfProblems(written[0].trimEnd()), []);
  });

  it('a destination that cannot be written costs only its own lines, counted as dropped', async () => {
    const log: string[] = [];
    const recorder = createMetrics(configWith('metrics_emf=/nonexistent-dir/metrics.log'), { log: (l) => log.push(l) });
    recorder.invocation(invoke('a'));
    await recorder.flush();
    await waitFor(() => log.some((l) => /emf cannot write/.test(l)), 'the write error');
    recorder.invocation(invoke('a'));
    await recorder.close(200);
    assert.equal(log.filter((l) => /emf cannot write \/nonexistent-dir\/metrics.log/.test(l)).length, 1);
    assert.ok(recorder.dropped().get('emf')! >= 1);
  });
});
