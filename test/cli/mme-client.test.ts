/**
 * mme-client against a real server with TLS, mutual TLS, inference_token and management_token on:
 * the client's --token, --management-token, --cacert, --cert and --key (and their environment
 * variables) reach every listener, HTTPS and gRPC, and a missing one is the server's refusal.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { runNodeScript, type ScriptRun } from '../../harness/run-node-script';
import { addModel, writeModelDir } from '../../harness/onnx-models';
import { startTestServer, tempDir, type TestServer } from '../../harness/test-server';
import { issue, makeCa, type KeyPair } from '../../harness/tls-certificates';

const kInference = 'infer-token-5d1e';
const kManagement = 'manage-token-c04b';
const row = Array.from({ length: 16 }, (_, i) => i);
const plusOne = row.map((v) => v + 1);
const v2 = JSON.stringify({ inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 16], data: row }] });

describe('mme-client with TLS, mutual TLS and tokens', () => {
  let t: TestServer;
  let ca: KeyPair;
  let client: KeyPair;
  let grpc: string;
  /** The client's TLS options: the server's CA and a client certificate its client CA signed. */
  let tlsArgs: string[];
  const run = (args: string[], env: Record<string, string | undefined> = {}): Promise<ScriptRun> =>
    runNodeScript('mme-client', args, {
      MME_URL: undefined,
      MME_GRPC: undefined,
      MME_INFERENCE_TOKEN: undefined,
      MME_MANAGEMENT_TOKEN: undefined,
      ...env,
    });
  const ok = (r: ScriptRun) => {
    assert.equal(r.code, 0, `exit ${r.code}\n${r.stdout}\n${r.stderr}`);
    return r.stdout;
  };

  before(async () => {
    const dir = tempDir('mme-client-tls-');
    ca = makeCa(dir, 'ca');
    const server = issue(dir, ca, 'server');
    const clientCa = makeCa(dir, 'client-ca');
    client = issue(dir, clientCa, 'client', { client: true });
    t = await startTestServer(
      [
        'inference_address=https://127.0.0.1:0',
        'management_address=https://127.0.0.1:0',
        'grpc_inference_port=0',
        `tls_cert_file=${server.cert}`,
        `tls_key_file=${server.key}`,
        `tls_client_ca_file=${clientCa.cert}`,
        `inference_token=${kInference}`,
        `management_token=${kManagement}`,
      ].join('\n'),
    );
    grpc = `localhost:${t.server.grpc!.port}`;
    tlsArgs = ['--cacert', ca.cert, '--cert', client.cert, '--key', client.key];
    writeModelDir(t.store, 'add', addModel());
  });
  after(async () => {
    await t?.close();
  });

  it('loads with --management-token over mutual TLS; without the token the server says 401', async () => {
    const refused = await run(['--url', t.managementUrl, ...tlsArgs, 'load', 'add', 'add']);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /→ 401/);
    ok(await run(['--url', t.managementUrl, ...tlsArgs, '--management-token', kManagement, 'load', 'add', 'add']));
    const described = JSON.parse(
      ok(await run(['--url', t.managementUrl, ...tlsArgs, 'describe', 'add'], { MME_MANAGEMENT_TOKEN: kManagement })),
    ) as { modelName: string };
    assert.equal(described.modelName, 'add');
  });

  it('invokes and v2-infers over HTTPS with --token (or $MME_INFERENCE_TOKEN); without it, 401', async () => {
    const body = JSON.stringify({ inputs: { x: [row] } });
    const invoked = JSON.parse(
      ok(await run(['--url', t.url, ...tlsArgs, '--token', kInference, 'invoke', 'add', body])),
    ) as { outputs: { y: number[][] } };
    assert.deepEqual(invoked.outputs.y, [plusOne]);
    const inferred = JSON.parse(
      ok(await run(['--url', t.url, ...tlsArgs, 'v2-infer', 'add', v2], { MME_INFERENCE_TOKEN: kInference })),
    ) as { outputs: Array<{ data: number[] }> };
    assert.deepEqual(inferred.outputs[0].data, plusOne);
    const refused = await run(['--url', t.url, ...tlsArgs, 'invoke', 'add', body]);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /→ 401/);
  });

  it('calls gRPC over mutual TLS (--cacert implies --grpc-tls) with the token as authorization metadata', async () => {
    const inferred = JSON.parse(
      ok(await run(['--grpc', grpc, ...tlsArgs, '--token', kInference, 'grpc-infer', 'add', v2])),
    ) as { outputs: Array<{ data: number[] }> };
    assert.deepEqual(inferred.outputs[0].data, plusOne);
    const refused = await run(['--grpc', grpc, ...tlsArgs, 'grpc-infer', 'add', v2]);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /gRPC status 16/); // UNAUTHENTICATED
    assert.match(ok(await run(['--grpc', grpc, ...tlsArgs, 'grpc-ping'])), /Healthy/);
  });

  it('calls gRPC over TLS to an IP address with no DEP0123 warning (no server name sent); a server its CA did not sign is refused', async () => {
    const byAddress = grpc.replace('localhost', '127.0.0.1');
    const run1 = await run(['--grpc', byAddress, ...tlsArgs, 'grpc-ping']);
    assert.match(ok(run1), /Healthy/);
    assert.doesNotMatch(run1.stderr, /DEP0123|Warning/);
    const otherCa = makeCa(tempDir('mme-client-other-ca-'), 'other');
    const untrusted = await run([
      '--grpc',
      byAddress,
      '--cacert',
      otherCa.cert,
      '--cert',
      client.cert,
      '--key',
      client.key,
      'grpc-ping',
    ]);
    assert.equal(untrusted.code, 1, untrusted.stdout);
    assert.match(untrusted.stderr, /unable to verify the first certificate.*gRPC status 14/);
    assert.doesNotMatch(untrusted.stderr, /DEP0123/);
  });

  it('is refused by the TLS handshake without a client certificate, or without the CA', async () => {
    for (const args of [
      ['--cacert', ca.cert],
      ['--cert', client.cert, '--key', client.key],
    ]) {
      const r = await run(['--url', t.url, ...args, 'ping']);
      assert.equal(r.code, 1, r.stdout);
      assert.match(r.stderr, /GET https:\/\/127\.0\.0\.1:\d+\/ping failed: /);
    }
  });

  it('says what to change for --cert without --key, or a PEM file it cannot read', async () => {
    const half = await run(['--url', t.url, '--cert', client.cert, 'ping']);
    assert.equal(half.code, 2);
    assert.match(half.stderr, /--cert and --key go together/);
    const missing = await run(['--url', t.url, '--cacert', `${ca.cert}.missing`, 'ping']);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /--cacert .*ca\.crt\.missing: ENOENT/);
    assert.ok(fs.existsSync(ca.cert));
  });
});
