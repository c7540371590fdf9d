/**
 * Peer suites: MMS's and TorchServe's own management-API Postman collections and MMS's inference
 * collection, run with newman's Node API against a real server (one listener for both APIs, as on SageMaker).
 *
 * The collections are read from the sibling checkout `../shared/peer-tests/` (CI clones the repository
 * next to shared/; without it the suites are skipped with the reason printed) and rewritten IN MEMORY
 * only, never on disk:
 *
 * - every .mar url of a real model becomes the path of a local ONNX model directory in the server's
 *   model_store, named as the collection names the model (squeezenet1_1, resnet18, …);
 * - the deliberately invalid url (…/invalid-resnet-18.mar) keeps its https url: MMS answers 400
 *   because it cannot download it, and this server refuses every remote url with 400;
 * - hostname, mgmt-port and pred-port point at the test server's single port;
 * - an expectation is changed only where this server differs from MMS/TorchServe on purpose, as the
 *   README documents; each change below names the request, says why, and fails loudly when the
 *   upstream text it replaces is no longer there. Rows skipped are listed with their reason.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import newman, { type NewmanRunSummary } from 'newman';
import { addModel, mlpModel, writeModelDir } from '../../harness/onnx-models';
import { startTestServer, tempDir, type TestServer } from '../../harness/test-server';
import { skipBecause } from '../helpers/skip';

/** The repository root: the nearest ancestor of this file (test/e2e or dist/test/e2e) with a package.json. */
function repoRoot(): string {
  let dir = __dirname;
  while (!fs.existsSync(path.join(dir, 'package.json'))) {
    const up = path.dirname(dir);
    if (up === dir) throw new Error(`no package.json above ${__dirname}`);
    dir = up;
  }
  return dir;
}

const kPeerTests = path.resolve(repoRoot(), '..', 'shared', 'peer-tests');

// Postman collections, environments and newman's run records are untyped JSON here.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

function readJson(file: string): Json {
  return JSON.parse(fs.readFileSync(file, 'utf8'));
}

/** Writes a tiny ONNX model directory into the store; its path must need no escaping in a query string. */
function modelDir(t: TestServer, name: string): string {
  const dir = writeModelDir(t.store, name, mlpModel({ sizes: [4, 8, 3] }));
  assert.match(dir, /^[A-Za-z0-9/._-]+$/, `model dir ${dir} would need escaping in a url`);
  return dir;
}

function environment(t: TestServer, extra: Record<string, string> = {}): Json {
  const port = new URL(t.managementUrl).port;
  assert.equal(new URL(t.url).port, port, 'startTestServer serves both APIs on one listener');
  // 127.0.0.1, not localhost: Node 20 may resolve localhost to ::1, and the server binds IPv4.
  const values: Record<string, string> = {
    protocol: 'http',
    hostname: '127.0.0.1',
    'mgmt-port': port,
    'pred-port': port,
    ...extra,
  };
  return {
    name: 'mme-peer-tests',
    values: Object.entries(values).map(([key, value]) => ({ key, value, enabled: true })),
  };
}

interface RunOptions {
  collection: Json;
  environment: Json;
  iterationData?: Json[];
  /** Names an iteration in messages (default: the request's name). */
  label?: (iteration: number) => string;
}

function runNewman({ collection, environment, iterationData }: RunOptions): Promise<NewmanRunSummary> {
  return new Promise((resolve, reject) => {
    newman.run({ collection, environment, iterationData, reporters: [], timeoutRequest: 30_000 }, (err, summary) =>
      err ? reject(err) : resolve(summary),
    );
  });
}

function oneLine(s: string, max = 300): string {
  const flat = s.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
}

/** "name: METHOD url -> status body" for one executed request. */
function describeExecution(e: Json, label: RunOptions['label']): string {
  const status = e.response
    ? `${e.response.code} ${oneLine(e.response.stream?.toString('utf8') ?? '')}`
    : `no response (${e.requestError?.message ?? 'unknown error'})`;
  const name = label ? label(e.cursor.iteration) : e.item.name;
  return `${name}: ${e.request.method} ${e.request.url.toString()} -> ${status}`;
}

/**
 * Runs a collection and asserts that every assertion passed. On failure it prints each failed request
 * with its message, the whole transcript and the server log, then fails with the list.
 */
async function assertCollectionPasses(t: TestServer, options: RunOptions): Promise<void> {
  const started = Date.now();
  const summary = await runNewman(options);
  const executions: Json[] = summary.run.executions;
  const total = summary.run.stats.assertions.total ?? 0;
  console.log(`      ${executions.length} requests, ${total} assertions in ${Date.now() - started} ms`);
  // Each iteration runs every request of the collection once.
  assert.equal(
    executions.length,
    options.iterationData ? options.iterationData.length * options.collection.item.length : executions.length,
    'every iteration ran',
  );
  assert.ok(total > 0, 'the collection ran no assertion');
  if (summary.run.failures.length === 0) return;
  const failed = executions.flatMap((e) =>
    (e.assertions ?? [])
      .filter((a: Json) => a.error)
      .map((a: Json) => `  ${describeExecution(e, options.label)}\n    ${a.assertion}: ${a.error.message}`),
  );
  console.log(`      transcript:\n${executions.map((e) => `    ${describeExecution(e, options.label)}`).join('\n')}`);
  console.log(`      server log:\n${t.logs.map((l) => `    ${l}`).join('\n')}`);
  // Failures that are not assertions (a script error, a request that got no response) are listed too.
  const other = summary.run.failures
    .filter((f: Json) => !f.error?.name?.includes('AssertionError'))
    .map((f: Json) => `  ${f.source?.name ?? '?'} (iteration ${f.cursor?.iteration}): ${f.error?.message}`);
  assert.fail(`${summary.run.failures.length} of ${total} assertions failed:\n${[...failed, ...other].join('\n')}`);
}

// -------------------------------------------------------------------------------------------------
// MMS: test/postman/management_api_test_collection.json, run as upstream does (no iteration data).

/** Changes one request's expected status list in its test script; the request must exist once and hold `from`. */
function patchMmsExpectation(collection: Json, p: { name: string; url: string; from: string; to: string }): void {
  const items = (collection.item as Json[]).filter(
    (i) => i.name === p.name && (i.request.url.raw as string).includes(p.url),
  );
  assert.equal(items.length, 1, `MMS collection: expected one request "${p.name}" with ${p.url}`);
  const exec: string[] = items[0].event.find((e: Json) => e.listen === 'test').script.exec;
  const line = exec.findIndex((l) => l.includes(p.from));
  assert.ok(line >= 0, `MMS collection: "${p.name}" no longer expects ${p.from}`);
  exec[line] = exec[line].replace(p.from, p.to);
}

// -------------------------------------------------------------------------------------------------
// TorchServe: one templated request driven by management_data.json (METHOD, path, status_code ?? 200).

interface TsRow {
  test: string;
  METHOD: string;
  path: string;
  status_code?: number;
}

/** Rows of management_data.json left out, by index, each with the reason (besides the versioned rows). */
const kTsSkips: Array<{ index: number; test: string; why: string }> = [
  {
    index: 16,
    test: 'Register Model invalid Runtime',
    why: "runtime picks TorchServe's Python runtime (python, python2, python3); this server has no Python and its runtime is always node, so the parameter is not part of its API",
  },
  {
    index: 30,
    test: 'Register Model with Additional Params and startup_timeout as 0',
    why: 'startup_timeout is TorchServe-only (MMS has no such parameter); the equivalent here is load_timeout, at least 1 s',
  },
  { index: 31, test: 'Register Model with startup_timeout as 0', why: 'startup_timeout is TorchServe-only, as row 30' },
  { index: 32, test: 'UnRegister Model', why: 'unregisters the model that the skipped row 31 registers' },
];

/** Versioned models (models/{name}/{version}, …/all, …/set-default) are TorchServe's; MMS and this server have one version per name. */
const kVersionedPath = /^models\/[^/?]+\/[^?]/;

const kStrict =
  'deliberate: this server answers 400 for a parameter value it cannot parse, where TorchServe silently uses the default (README: "400 missing/bad field"; MME_ERR_BAD_REQUEST "bad parameter value")';
const kHandler =
  'deliberate: a register starts default_workers_per_model workers and answers once they have loaded (README, POST /models), so a handler that cannot be imported fails the register with 400 MME_ERR_INVALID_MODEL ("a handler that fails to import"); TorchServe registers with zero workers and never imports it';
const kNotRegistered = 'follows from the register above being refused: there is no such model (404)';

/** Expected statuses changed, by row index; `from` is what upstream expects (200 when the row names none). */
const kTsPatches: Array<{ index: number; test: string; from: number; to: number; why: string }> = [
  {
    index: 3,
    test: 'Model Re-Registration Densenet161',
    from: 500,
    to: 409,
    why: 'deliberate: a name that is already loaded answers 409 MME_ERR_MODEL_CONFLICT, as SageMaker MME requires (README: "409 name loaded or loading"); TorchServe answers 500',
  },
  {
    index: 7,
    test: 'Register Mnist Model with Invalid Handler',
    from: 200,
    to: 400,
    why: `handler=invalidHandler: ${kHandler}`,
  },
  { index: 8, test: 'UnRegister Model mnist', from: 200, to: 404, why: kNotRegistered },
  {
    index: 9,
    test: 'Register Mnist Model with Invalid Handler',
    from: 200,
    to: 400,
    why: `handler=invalidHandler: ${kHandler}`,
  },
  {
    index: 10,
    test: 'Scale Invalid Mnist Handler Model with Min Workers - Synchronous',
    from: 500,
    to: 404,
    why: `${kNotRegistered}; TorchServe registered it and fails only here, when a worker imports the handler`,
  },
  { index: 11, test: 'UnRegister Model mnist', from: 200, to: 404, why: kNotRegistered },
  {
    index: 28,
    test: 'Register Model with Additional Params',
    from: 200,
    to: 400,
    why: `handler=serve/ts/torch_handler/image_classifier.py:handle (a Python file of TorchServe's source tree): ${kHandler}`,
  },
  { index: 29, test: 'UnRegister Model', from: 200, to: 404, why: kNotRegistered },
  {
    index: 35,
    test: 'Register Model with Non integer Batch Size',
    from: 200,
    to: 400,
    why: `batch_size=dd: ${kStrict}`,
  },
  { index: 36, test: 'UnRegister Model Resnet152', from: 200, to: 404, why: kNotRegistered },
  {
    index: 37,
    test: 'Register Model with integer Batch Size but non integer max batch delay parameter',
    from: 200,
    to: 400,
    why: `max_batch_delay=junk: ${kStrict}`,
  },
  { index: 38, test: 'UnRegister Model Resnet152', from: 200, to: 404, why: kNotRegistered },
  {
    index: 39,
    test: 'Register Squeezenet Model Negative initial workers',
    from: 200,
    to: 400,
    why: `initial_workers=-1: ${kStrict}`,
  },
  { index: 40, test: 'UnRegister Model', from: 200, to: 404, why: kNotRegistered },
  {
    index: 43,
    test: 'Register Model non boolean Synchronous value',
    from: 200,
    to: 400,
    why: `synchronous=-1: ${kStrict}`,
  },
  { index: 44, test: 'UnRegister Model Resnet-18', from: 200, to: 404, why: kNotRegistered },
  {
    index: 45,
    test: 'Register Resnet Model Asynchronous',
    from: 200,
    to: 202,
    why: 'deliberate: synchronous=false starts the workers in the background and answers 202 at once (README: "202 with synchronous=false"); TorchServe registers with zero workers and answers 200',
  },
  {
    index: 56,
    test: 'Register Model - Empty URL , Valid Model Name',
    from: 404,
    to: 400,
    why: 'deliberate: an empty url is a missing field, 400 MME_ERR_BAD_REQUEST (README: "400 missing/bad field"); TorchServe looks the empty name up in its store and answers 404',
  },
  {
    index: 61,
    test: 'Scale Workers - Valid "min_worker" value, Invalid "synchronous"',
    from: 202,
    to: 400,
    why: `synchronous=Nan: ${kStrict}`,
  },
  {
    index: 62,
    test: 'Scale Workers - Invalid parameter values for both "synchronous" & "min_worker" params',
    from: 202,
    to: 400,
    why: `min_worker=nan: ${kStrict}`,
  },
  {
    index: 68,
    test: 'Scale worker by calling Update Worker API with negative min worker Count',
    from: 500,
    to: 400,
    why: 'deliberate: a negative worker count is a bad request (README, PUT /models/{name}: "400 max < min or negative"); TorchServe fails it with 500',
  },
];

/** The rows to run, patched, each with its index in management_data.json. */
function torchServeRows(rows: TsRow[]): Array<TsRow & { row: number }> {
  const at = (index: number, test: string): TsRow => {
    const row = rows[index];
    assert.equal(row?.test, test, `management_data.json row ${index} is no longer "${test}"`);
    return row;
  };
  for (const p of kTsPatches) {
    const row = at(p.index, p.test);
    assert.equal(
      row.status_code ?? 200,
      p.from,
      `management_data.json row ${p.index} "${p.test}" no longer expects ${p.from}`,
    );
    row.status_code = p.to;
  }
  for (const skip of kTsSkips) at(skip.index, skip.test);
  const skipped = new Set(kTsSkips.map((skip) => skip.index));
  return rows.map((r, row) => ({ ...r, row })).filter((r) => !skipped.has(r.row) && !kVersionedPath.test(r.path));
}

/**
 * A fresh server for one collection's describe, started once `file` (a peer-tests file it needs) is
 * found; without it the describe skips with the reason.
 */
function serverFor(file: string): () => TestServer {
  let t: TestServer | undefined;
  before(async function () {
    if (!fs.existsSync(file))
      skipBecause(this, 'peer-tests', `${file} is missing (CI clones the repository next to shared/)`);
    t = await startTestServer();
  });
  after(async () => {
    await t?.close();
  });
  return () => t!;
}

describe('peer suites: MMS and TorchServe management collections, MMS inference collection (newman)', function () {
  // Each collection starts a few dozen worker processes one after another: a few seconds in all.
  this.timeout(120_000);

  describe("MMS's management_api_test_collection.json", () => {
    const file = path.join(kPeerTests, 'mms', 'management_api_test_collection.json');
    const server = serverFor(file);

    it('passes every assertion with local model directories in place of the S3 .mar urls', async () => {
      const s = server();
      const s3 = 'https://s3.amazonaws.com/model-server/model_archive_1.0/';
      let text = fs.readFileSync(file, 'utf8');
      for (const [mar, name] of [
        ['squeezenet_v1.1.mar', 'squeezenet1_1'],
        ['resnet-18.mar', 'resnet18'],
      ] as const) {
        assert.ok(text.includes(`${s3}${mar}`), `the MMS collection no longer loads ${s3}${mar}`);
        text = text.split(`${s3}${mar}`).join(modelDir(s, name));
      }
      // `${s3}invalid-resnet-18.mar` stays as it is: remote urls are refused with 400 (nothing is ever downloaded).
      assert.ok(text.includes(`${s3}invalid-resnet-18.mar`));
      const collection = JSON.parse(text);

      // Deliberate difference: with synchronous=false this server starts the model's workers in the
      // background and answers 202 Accepted at once (README, POST /models: "202 with synchronous=false");
      // MMS registers the model with zero workers (no initial_workers) and answers 200.
      patchMmsExpectation(collection, {
        name: 'Register Resnet Model',
        url: 'synchronous=false',
        from: 'oneOf([200])',
        to: 'oneOf([202])',
      });

      await assertCollectionPasses(s, { collection, environment: environment(s) });
    });
  });

  describe("MMS's inference_api_test_collection.json", () => {
    const file = path.join(kPeerTests, 'mms', 'inference_api_test_collection.json');
    const server = serverFor(file);

    // inference_data.json's 28 rows register MXNet and ONNX image classifiers from S3 .mar archives and
    // post test/resources/kitten.jpg of MMS's tree: neither is here, nor a handler that answers their
    // [{class, probability}] form. The collection itself (register, predict, unregister, with its own
    // test scripts unchanged) runs with rows of local models whose answers are exact: y = x + 1 on
    // small integers, so its default_json validator (_.isEqual) holds on any CPU.
    it('passes every assertion of its register → predict → unregister requests, with rows of local ONNX models', async () => {
      const s = server();
      const dir = tempDir('mme-mms-inference-');
      const rows = [
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
        [-3, 0, 7, 100, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1, 1, 1],
      ];
      const iterationData = ['add_one', 'add_two'].map((name, i) => {
        const body = path.join(dir, `${name}.json`);
        fs.writeFileSync(body, JSON.stringify({ inputs: { x: [rows[i]] } }));
        return {
          url: writeModelDir(s.store, name, addModel()),
          model_name: name,
          worker: 1,
          synchronous: 'true',
          file: body,
          'content-type': 'application/json',
          validator: 'default_json',
          expected: { outputs: { y: [rows[i].map((v) => v + 1)] } },
        };
      });
      const collection = readJson(file);
      assert.deepEqual(
        collection.item.map((i: Json) => i.name),
        ['Model Zoo - Register Model', 'Model Zoo - Inference Model', 'Model Zoo - Unregister model'],
      );
      await assertCollectionPasses(s, {
        collection,
        environment: environment(s),
        iterationData,
        label: (i) => iterationData[i].model_name,
      });
    });
  });

  describe("TorchServe's management_api_test_collection.json with management_data.json", () => {
    const dir = path.join(kPeerTests, 'torchserve');
    const server = serverFor(path.join(dir, 'management_data.json'));

    it('passes every non-versioned row, with the deliberate differences listed in kTsPatches', async () => {
      const s = server();
      // The rows name their archives through environment variables ({{mar_path_resnet-18}}, …).
      const marPaths: Record<string, string> = {};
      for (const [mar, name] of [
        ['squeezenet1_1', 'squeezenet1_1'],
        ['mnist', 'mnist'],
        ['densenet161', 'densenet161'],
        ['resnet-152-batch', 'resnet152'],
        ['resnet-18', 'resnet-18'],
      ] as const) {
        marPaths[`mar_path_${mar}`] = modelDir(s, name);
      }
      const collection = readJson(path.join(dir, 'management_api_test_collection.json'));
      const rows: TsRow[] = readJson(path.join(dir, 'management_data.json'));
      const kept = torchServeRows(rows);
      assert.equal(
        rows.length - kept.length,
        kTsSkips.length + 10,
        'ten versioned rows and the listed skips are left out',
      );
      // The two invalid-url rows keep their https url (refused with 400); every other url is a local directory.
      assert.deepEqual(
        kept.filter((r) => r.path.includes('https://')).map((r) => r.test),
        ['Model Re-Registration Densenet161', 'Register Model - Invalid URL'],
      );
      const label = (i: number) => `row ${kept[i]?.row} "${kept[i]?.test}"`;
      await assertCollectionPasses(s, {
        collection,
        environment: environment(s, marPaths),
        iterationData: kept,
        label,
      });
    });
  });
});
