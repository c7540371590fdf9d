/** Starts a real MmeServer on port 0 with a config resolved the same way the CLI does it. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { resolveConfig } from '../../src/config/resolve';
import { MmeServer, type MmeServerOptions } from '../../src/mme-server';
import { writeModelDir } from '../fixtures/onnx-models';

export interface TestServer {
  server: MmeServer;
  /** Base URL of the data plane (and of management when shared). */
  url: string;
  managementUrl: string;
  store: string;
  logs: string[];
  close(): Promise<void>;
}

export function tempDir(prefix = 'mme-test-'): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

/** config.properties text: `properties` appended to a shared-port, 1-worker base serving `store`. */
export function testProperties(store: string, properties = ''): string {
  return [
    'inference_address=http://127.0.0.1:0',
    'management_address=http://127.0.0.1:0',
    `model_store=${store}`,
    'default_workers_per_model=1',
    // Most suites count worker processes; spares have their own suite (test/workers/spare-pool.test.ts).
    'spare_workers=0',
    properties,
  ].join('\n');
}

export interface StartOptions {
  store?: string;
  /** The environment config.properties is resolved with. */
  env?: Record<string, string>;
  /** The environment worker processes start with (default: this process's). */
  workerEnv?: NodeJS.ProcessEnv;
  listenerLimits?: MmeServerOptions['listenerLimits'];
}

export async function startServer(properties = '', opts: StartOptions = {}): Promise<TestServer> {
  const store = opts.store ?? tempDir('mme-store-');
  const fileText = testProperties(store, properties);
  const config = resolveConfig({ fileText, configFile: 'test.properties', env: opts.env ?? {}, argv: { command: null, mmsConfig: null, modelStore: null, models: null, help: false } });
  const logs: string[] = [];
  const server = new MmeServer(config, { log: (line) => logs.push(line), env: opts.workerEnv, listenerLimits: opts.listenerLimits });
  await server.start();
  return {
    server,
    url: server.url('inference'),
    managementUrl: server.url('management'),
    store,
    logs,
    close: async () => {
      await server.close(0);
    },
  };
}

export interface JsonResponse {
  status: number;
  headers: Headers;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  text: string;
}

export async function request(url: string, init: RequestInit & { json?: unknown } = {}): Promise<JsonResponse> {
  const { json, ...rest } = init;
  const res = await fetch(url, {
    ...rest,
    ...(json === undefined ? {} : { body: JSON.stringify(json), headers: { 'content-type': 'application/json', ...(rest.headers as Record<string, string>) } }),
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: keep the text
  }
  return { status: res.status, headers: res.headers, body, text };
}

export function loadModel(t: Pick<TestServer, 'managementUrl'>, name: string, url: string, extra: Record<string, unknown> = {}): Promise<JsonResponse> {
  return request(`${t.managementUrl}/models`, { method: 'POST', json: { model_name: name, url, ...extra } });
}

/** Writes each model into the store and loads them all at once; every load must answer 200. */
export async function loadModels(t: Pick<TestServer, 'managementUrl' | 'store'>, models: Record<string, Uint8Array>): Promise<void> {
  const answers = await Promise.all(Object.entries(models).map(([name, bytes]) => loadModel(t, name, writeModelDir(t.store, name, bytes))));
  for (const r of answers) if (r.status !== 200) throw new Error(`load failed: ${r.status} ${r.text}`);
}

export function invoke(t: Pick<TestServer, 'url'>, name: string, body: unknown, headers: Record<string, string> = {}): Promise<JsonResponse> {
  return request(`${t.url}/models/${name}/invoke`, { method: 'POST', json: body, headers });
}
