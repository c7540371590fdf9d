/**
 * Starts a worker process (src/worker-process/main.ts, TorchServe's model_service_worker.py) and
 * wires its plumbing: frames on fd 3, stdout and stderr lines, its exit; the server's record of its
 * processes, and what one costs. What a process is for is host-process.ts's.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import type { Socket } from 'node:net';
import type { Clock } from '../../util/clock';
import { within } from '../../util/within';
import { FrameReader } from '../../protocol/frame-reader';
import type { Frame } from '../../protocol/messages';
import type { KillReason, WorkerExit } from './exit-reason';

export interface LiveProcess {
  kill(reason: KillReason): void;
  readonly exited: Promise<WorkerExit>;
}

/**
 * The worker processes of one server: what its shutdown kills, what a test counts. One per server
 * (made by the composition root), so two servers in one Node process never touch each other's.
 */
export class ProcessRegistry {
  /** Processes started so far (a 507 admission must start none). */
  spawned = 0;
  /** Every process not yet exited: a bounded shutdown kills what is left. */
  readonly live = new Set<LiveProcess>();
  /** Processes that exited on a promise rejection nobody handled (a bug): the test suite checks there were none. */
  unhandledRejectionExits = 0;
}

/**
 * Memory a process really costs (bytes; 0 once gone): PSS, which splits shared pages such as the
 * node binary and libonnxruntime between the processes mapping them, else RSS (older kernels have
 * no smaps_rollup).
 */
export async function processMemoryBytes(pid: number): Promise<number> {
  for (const [file, field] of [
    ['smaps_rollup', /^Pss:\s+(\d+) kB/m],
    ['status', /^VmRSS:\s+(\d+) kB/m],
  ] as const) {
    const m = field.exec(await fs.promises.readFile(`/proc/${pid}/${file}`, 'utf8').catch(() => ''));
    if (m) return Number(m[1]) * 1024;
  }
  return 0;
}

/** child_process.spawn, or in lifecycle tests a fake process speaking the frames (test/lifecycle/fake-process.ts). */
export type Launch = (
  cmd: string,
  args: readonly string[],
  options: { stdio: Array<'ignore' | 'pipe' | number>; env: NodeJS.ProcessEnv; detached: boolean },
) => ChildProcess;

export interface SpawnHooks {
  onLine(line: string): void;
  onFrame(frame: Frame): void;
  /** The reader is out of step with the stream, and reads nothing more. */
  onProtocolError(err: Error): void;
  onExit(code: number | null, signal: NodeJS.Signals | null): void;
}

export type SpawnedWorker = ReturnType<typeof spawnProcess>;

/** Frame limit until a model (and its max_response_size) is assigned: Started/LoadFailed are tiny. */
const kUnassignedFrameLimit = 1 << 20;
const kWorkerScript = path.join(__dirname, '..', '..', 'worker-process', 'main.js');
/** `node --cpu-prof[-dir=…] dist/src/main.js` profiles the workers too: both sides of every request. */
const kProfilerArgs = process.execArgv.filter((a) => /^--(cpu|heap)-prof/.test(a));
/** The workers write their profiles on a clean exit. */
export const kWorkersProfiled = kProfilerArgs.length > 0;
// PR_SET_PDEATHSIG through util-linux: the kernel kills the worker when the server dies, even by
// SIGKILL, even while the worker is stuck inside a native call that no JS timer could interrupt.
const kSetpriv = ['/usr/bin/setpriv', '/bin/setpriv'].find((p) => fs.existsSync(p)) ?? null;
// Make the kernel's OOM killer choose a worker, never the server holding every other model.
const kWorkerOomScoreAdj = '900';
/** How long an aborted worker's last stderr lines (V8's reason) may take to arrive after its exit. */
const kAbortReasonWaitMs = 500;

/** `ringFd`: the worker's body ring (hosts/body-handoff.ts), its fd 4. */
export function spawnProcess(
  launch: Launch | undefined,
  env: NodeJS.ProcessEnv,
  clock: Clock,
  hooks: SpawnHooks,
  ringFd: number | null = null,
) {
  const node = [process.execPath, ...kProfilerArgs, kWorkerScript];
  const [cmd, ...args] = kSetpriv ? [kSetpriv, '--pdeathsig', 'KILL', ...node] : node;
  const stdio: Array<'ignore' | 'pipe' | number> = ['ignore', 'pipe', 'pipe', 'pipe'];
  if (ringFd !== null) stdio.push(ringFd);
  // Its own process group: a terminal's Ctrl-C reaches the server, which drains, not the workers
  // mid-request. It still dies with the server (pdeathsig above, and the end of fd 3).
  const child = (launch ?? spawn)(cmd, args, { stdio, env, detached: true });
  if (child.pid) fs.writeFile(`/proc/${child.pid}/oom_score_adj`, kWorkerOomScoreAdj, () => undefined);
  for (const stream of [child.stdout!, child.stderr!]) {
    readline.createInterface({ input: stream, crlfDelay: Infinity }).on('line', (line: string) => hooks.onLine(line));
  }
  const channel = child.stdio[3] as Socket;
  const reader = new FrameReader(kUnassignedFrameLimit, (frame) => hooks.onFrame(frame));
  const onData = (chunk: Buffer) => {
    try {
      reader.push(chunk);
    } catch (err) {
      channel.off('data', onData);
      channel.pause();
      hooks.onProtocolError(err as Error);
    }
  };
  channel.on('data', onData);
  channel.on('error', () => undefined);
  child.on('exit', (code, signal) => {
    if ((signal !== 'SIGABRT' && code !== 134) || child.stderr!.readableEnded) return hooks.onExit(code, signal);
    const ended = new Promise((resolve) => child.stderr!.once('end', resolve));
    void within(ended, kAbortReasonWaitMs, null, clock).then(() => hooks.onExit(code, signal));
  });
  return { child, channel, reader } as const;
}
