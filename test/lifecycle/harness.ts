/** A ModelManager on fake worker processes, with a model store and a virtual clock, for lifecycle tests that order events by hand. */
import fs from 'node:fs';
import path from 'node:path';
import { resolveConfig } from '../../src/config/resolve';
import { isMmeError, type MmeError } from '../../src/errors';
import type { InvokeRequest } from '../../src/protocol/messages';
import { ModelManager, type ManagerOptions } from '../../src/server/models/model-manager';
import { addModel, writeModelDir } from '../../harness/onnx-models';
import { tempDir, testProperties } from '../../harness/test-server';
import { ProcessRegistry } from '../../src/server/processes/worker-spawn';
import { VirtualClock } from '../helpers/virtual-clock';
import { waitFor } from '../../harness/process-probes';
import { watchProcesses } from '../../harness/watched-processes';
import { FakeFleet, type FakeOptions } from './fake-fleet';
import { FakeProcesses, type FakeProcess, type FakeProcessOptions } from './fake-process';

export interface Harness {
  manager: ModelManager;
  fleet: FakeFleet;
  /** Every timer and `now` of the core: time passes only when the test advances it. */
  clock: VirtualClock;
  store: string;
  logs: string[];
  /** Writes a model directory named `name` into the store (with `onnxBytes` of weights when given); returns its path. */
  model(name: string, onnxBytes?: number): string;
}

/** A ModelManager whose dedicated workers run on fake processes, each driven through `fleet`. */
export function harness(properties = '', fake: Partial<FakeOptions> = {}): Harness {
  const processes = new ProcessRegistry();
  const fleet = new FakeFleet(processes, fake);
  return {
    ...managerOn(properties, { launch: fleet.launch, readMemory: fleet.readMemory, clock: fleet.clock, processes }),
    fleet,
    clock: fleet.clock,
  };
}

/** A ModelManager whose worker processes are fake processes speaking frames, on virtual time. */
export interface ProcessHarness extends Omit<Harness, 'fleet'> {
  processes: FakeProcesses;
  /** The server's record of its processes: the host each fake process is. */
  registry: ProcessRegistry;
}

/** `readMemory`: what each fake process measures (default: nothing, as a pid without /proc). */
export function processHarness(
  properties = '',
  fake: Partial<FakeProcessOptions> = {},
  readMemory?: ManagerOptions['readMemory'],
): ProcessHarness {
  const processes = new FakeProcesses(fake);
  const clock = new VirtualClock();
  const registry = new ProcessRegistry();
  return {
    ...managerOn(properties, { launch: processes.launch, clock, processes: registry, readMemory }),
    processes,
    clock,
    registry,
  };
}

function managerOn(properties: string, opts: ManagerOptions): Omit<Harness, 'fleet' | 'clock'> {
  const store = tempDir('mme-lifecycle-store-');
  const config = resolveConfig({
    fileText: testProperties(store, properties),
    configFile: 'test.properties',
    env: {},
    argv: { command: null, mmsConfig: null, modelStore: null, models: null, help: false },
  });
  const logs: string[] = [];
  watchProcesses(opts.processes!);
  const manager = new ModelManager(config, tempDir('mme-lifecycle-cache-'), (l) => logs.push(l), opts);
  return {
    manager,
    store,
    logs,
    model(name, onnxBytes) {
      const dir = writeModelDir(store, name, addModel());
      if (onnxBytes)
        fs.writeFileSync(
          path.join(dir, 'model.onnx'),
          Buffer.concat([Buffer.from(addModel()), Buffer.alloc(onnxBytes)]),
        );
      return dir;
    },
  };
}

let nextId = 1;
export function invokeRequest(): InvokeRequest {
  return {
    id: 0,
    requestId: `req-${nextId++}`,
    contentType: 'application/json',
    accept: 'application/json',
    headers: {},
    body: Buffer.from('{}'),
  };
}

/** The outcome of a promise as a status: 200 (or the answer's), or the MmeError's. */
export async function statusOf(p: Promise<unknown>): Promise<{ status: number; code?: string; error?: MmeError }> {
  try {
    const r = await p;
    return { status: (r as { status?: number } | undefined)?.status ?? 200 };
  } catch (err) {
    if (!isMmeError(err)) throw err;
    return { status: err.status, code: err.code, error: err };
  }
}

/**
 * Runs `turn` (answering what the fake processes hold) again and again until every one of `pending`
 * is settled, and resolves with their values: frames reach a worker one at a time, so one pass of
 * answers does not settle a backlog.
 */
export async function answerUntilSettled<T>(pending: Array<Promise<T>>, turn: () => void, what: string): Promise<T[]> {
  let done = false;
  const all = Promise.all(pending).finally(() => (done = true));
  await waitFor(() => {
    turn();
    return done;
  }, what);
  return all;
}

/** The statuses of `pending` once answered: each turn answers every batch that `processes()` hold. */
export async function answeredStatuses(
  pending: Array<Promise<{ status: number }>>,
  processes: () => readonly FakeProcess[],
): Promise<number[]> {
  const turn = () => processes().forEach((p) => p.answerHeld());
  return (await answerUntilSettled(pending, turn, 'every request to be answered')).map((r) => r.status);
}
