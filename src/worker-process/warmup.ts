import * as ort from 'onnxruntime-node';
import { identityModel } from './graph-rewrite';

/**
 * Running the smallest model once initialises onnxruntime (~20 ms the first time in a process): a
 * worker started ahead of need pays that before its model is known.
 */
const kIdentityModel = identityModel([['', 13]]);

/** One thread each: a session that only answers whether it loads, or warms up the runtime. */
export const kOneThread = { intraOpNumThreads: 1, interOpNumThreads: 1 };
/** Sessions a shared host opens to measure what one costs. */
const kProbeSessions = 16;

export async function warmUpRuntime(): Promise<void> {
  const x = pinTensorArrayTypes();
  const session = await ort.InferenceSession.create(kIdentityModel, kOneThread);
  await session.run({ x });
  await session.release();
}

/**
 * The process's first Tensor, made with Float16Array hidden: onnxruntime-common picks each type's
 * array at the first Tensor, and with Float16Array (Node 24) turns float16's Uint16Array into a
 * Float16Array view whose byte length the 1.30 binding reads as 0, so every float16 input failed
 * (microsoft/onnxruntime PR 32323). Any process that makes tensors calls it first.
 */
export function pinTensorArrayTypes(): ort.Tensor {
  const g = globalThis as { Float16Array?: unknown };
  const float16Array = g.Float16Array;
  delete g.Float16Array;
  try {
    return new ort.Tensor('float32', Float32Array.of(1), [1]);
  } finally {
    if (float16Array !== undefined) g.Float16Array = float16Array;
  }
}

/**
 * What the smallest session costs, bytes: a shared host charges each model at least this, since a
 * load that reuses freed memory shows little growth of its own yet holds memory all the same.
 */
export async function measureSessionBytes(): Promise<number> {
  const rss0 = process.memoryUsage.rss();
  const sessions = [];
  for (let i = 0; i < kProbeSessions; i++) sessions.push(await ort.InferenceSession.create(kIdentityModel, kOneThread));
  const each = Math.max(0, process.memoryUsage.rss() - rss0) / kProbeSessions;
  for (const s of sessions) await s.release();
  return Math.round(each);
}
