/**
 * The server inside the test process: a real MmeServer on port 0 with a config resolved the same way
 * the CLI does it (harness/cli-server.ts starts it as a process of its own).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { resolveConfig } from '../src/config/resolve';
import { MmeServer, type MmeServerOptions } from '../src/mme-server';
import { watchProcesses } from './watched-processes';

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
    // Most suites count worker processes; spares have their own suite (test/server/workers/spare-pool.test.ts).
    'spare_workers=0',
    properties,
  ].join('\n');
}

export interface TestServerOptions {
  store?: string;
  /** The environment config.properties is resolved with. */
  env?: Record<string, string>;
  /** The environment worker processes start with (default: this process's). */
  workerEnv?: NodeJS.ProcessEnv;
  listenerLimits?: MmeServerOptions['listenerLimits'];
}

export async function startTestServer(properties = '', opts: TestServerOptions = {}): Promise<TestServer> {
  const store = opts.store ?? tempDir('mme-store-');
  const fileText = testProperties(store, properties);
  const config = resolveConfig({
    fileText,
    configFile: 'test.properties',
    env: opts.env ?? {},
    argv: { command: null, mmsConfig: null, modelStore: null, models: null, help: false },
  });
  const logs: string[] = [];
  const server = new MmeServer(config, {
    log: (line) => logs.push(line),
    env: opts.workerEnv,
    listenerLimits: opts.listenerLimits,
  });
  watchProcesses(server.processes);
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
