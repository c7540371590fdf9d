/**
 * Entry point of a worker process (a dedicated worker or a shared host): frames of src/protocol/
 * over fd 3, a socketpair the parent made; stdout/stderr are logs the parent forwards. Each model's
 * batches run in the order sent (the parent counts its oldest as the one running when the process
 * dies), different models' side by side, so a model never waits behind a neighbour's queue; a
 * preload_model worker runs its batches at once. Loads run one at a time: each one's memory growth
 * is its own.
 */
// First: the compile cache covers only what is required after it.
import './compile-cache';
import net from 'node:net';
import { writeFrame } from '../protocol/frame-codec';
import { FrameReader } from '../protocol/frame-reader';
import { MessageKind, type Frame, type InferMessage, type LoadMessage } from '../protocol/messages';
import { exitOnUnhandledRejection, forRequest } from '../unhandled-rejection';
import { BodyRingReader } from './body-ring-reader';
import { loadError, ModelRuntime, type RunningRequests, type RuntimeIo } from './model-runtime';
import { FairTurns } from './run-clock';
import { measureSessionBytes, warmUpRuntime } from './warmup';

const kMaxFrame = 2 ** 31 - 1;

const models = new Map<number, ModelRuntime>();
/** Tail of each model's chain of batches (and its unload, which waits for them), by slot. */
const chains = new Map<number, Promise<void>>();
let loading: Promise<void> = Promise.resolve();
const running: RunningRequests = new Map();
// A shared host gives its models' session runs fair turns.
const shared = process.env.MME_SHARED_HOST === '1';
const turns = shared ? new FairTurns() : null;
const bodies = BodyRingReader.fromEnv(process.env);

function send(frame: Frame): void {
  writeFrame(channel, frame, 'now');
}

function log(line: string): void {
  process.stderr.write(`${line}\n`);
}

exitOnUnhandledRejection(log);

/** A failure that escapes a batch (a bug) names its requests. */
function run(runtime: ModelRuntime, batch: InferMessage): Promise<void> {
  return runtime.runBatch(batch).catch((err: unknown) => {
    throw forRequest(err, batch.requests.map((r) => r.requestId).join(', '));
  });
}

function chain(slot: number, work: () => Promise<void>): void {
  const tail = (chains.get(slot) ?? Promise.resolve()).then(work);
  chains.set(slot, tail);
  // A rejection here is a bug escaping run(): it stays unhandled, and exitOnUnhandledRejection reports it.
  void tail.then(() => {
    if (chains.get(slot) === tail) chains.delete(slot);
  });
}

function io(slot: number): RuntimeIo {
  return {
    result: (msg) => send({ kind: MessageKind.Result, msg }),
    chunk: (id, body, head) => send({ kind: MessageKind.Chunk, msg: { slot, id, head, body } }),
    running,
    log,
    turns,
    bodies,
  };
}

const reader = new FrameReader(kMaxFrame, (frame) => {
  switch (frame.kind) {
    case MessageKind.Load:
      loading = loading.then(() => load(frame.msg));
      break;
    case MessageKind.Infer: {
      const slot = frame.msg.slot ?? 0;
      const runtime = models.get(slot);
      if (!runtime) break; // the parent never sends a batch for a slot it has not seen loaded
      // runBatch answers every request itself: what escapes it is a bug, left to exitOnUnhandledRejection.
      if (runtime.load.concurrentBatches) void run(runtime, frame.msg);
      else chain(slot, () => run(runtime, frame.msg));
      break;
    }
    case MessageKind.Unload: {
      // After a load of it still in progress (the parent gave up waiting), and after its batches.
      const { slot } = frame.msg;
      void loading.then(() => chain(slot, () => unload(slot)));
      break;
    }
    case MessageKind.Cancel: {
      const r = running.get(frame.msg.id);
      r?.ctx.cancel(r.index);
      break;
    }
    case MessageKind.ChunkAck: {
      const r = running.get(frame.msg.id);
      r?.ctx.acknowledge(r.index, frame.msg.bytes);
      break;
    }
    default:
      break;
  }
});

// Reads land where the reader says: no buffer per read, a frame's bytes copied at most once.
// (Node's Socket constructor takes `onread`; its typings list it only for connect.)
const channelOptions: net.SocketConstructorOpts & net.ConnectOpts = {
  fd: 3,
  readable: true,
  writable: true,
  onread: {
    buffer: () => reader.readTarget(),
    callback: (n, target) => {
      reader.wrote(n, target);
      return true;
    },
  },
};
// Declared after the reader: the socket asks for its first read target as it is made.
const channel = new net.Socket(channelOptions);
// Started goes out once the runtime is warm: a spare worker then loads a model in milliseconds.
warmUpRuntime()
  .then(() => (shared ? measureSessionBytes() : 0))
  .then(
    (sessionBytes) => send({ kind: MessageKind.Started, msg: { pid: process.pid, sessionBytes } }),
    (err) => {
      log(`onnxruntime failed to initialise: ${(err as Error).message}`);
      process.exit(70);
    },
  );
// The parent is gone (or closed us): nothing can reach us any more, so leave at once.
channel.on('end', () => process.exit(0));
channel.on('error', () => process.exit(0));

async function load(msg: LoadMessage): Promise<void> {
  const { slot } = msg;
  const rss0 = process.memoryUsage.rss();
  try {
    // A dedicated worker may have been a spare, started before its model was known; handlers written
    // for MMS expect the model directory as cwd. A shared host has no one directory to be in.
    if (!msg.shared) process.chdir(msg.modelDir);
    const { runtime, loaded } = await ModelRuntime.open(msg, io(slot));
    models.set(slot, runtime);
    send({
      kind: MessageKind.Loaded,
      msg: { slot, pid: process.pid, ...loaded, rssGrowthBytes: Math.max(0, process.memoryUsage.rss() - rss0) },
    });
  } catch (err) {
    send({ kind: MessageKind.LoadFailed, msg: { slot, error: loadError(err) } });
  }
}

async function unload(slot: number): Promise<void> {
  const runtime = models.get(slot);
  models.delete(slot);
  try {
    await runtime?.release();
  } catch (err) {
    log(`releasing model ${runtime?.load.modelName}: ${(err as Error).message}`);
  }
  send({ kind: MessageKind.Unloaded, msg: { slot } });
}
