import * as ort from 'onnxruntime-node';

/**
 * A 70-byte ONNX graph (y = Identity(x), float32[1]). Creating and running it once initialises
 * onnxruntime's environment (~20 ms the first time in a process), so a worker started ahead of
 * need pays that before any model is assigned to it.
 */
const kIdentityModel = Buffer.from(
  'CAg6PAoQCgF4EgF5IghJZGVudGl0eRIGd2FybXVwWg8KAXgSCgoICAESBAoCCAFiDwoBeRIKCggIARIECgIIAUIECgAQDQ==',
  'base64',
);

const kOptions = { intraOpNumThreads: 1, interOpNumThreads: 1 };
/** Sessions a shared host opens to measure what one costs. */
const kProbeSessions = 16;

export async function warmUpRuntime(): Promise<void> {
  const session = await ort.InferenceSession.create(kIdentityModel, kOptions);
  await session.run({ x: new ort.Tensor('float32', Float32Array.of(1), [1]) });
  await session.release();
}

/**
 * What the smallest session costs in this process (bytes): the resident growth across opening
 * kProbeSessions of the identity graph, each. A shared host charges each model at least this much:
 * a load that reuses memory freed earlier shows little or no growth of its own, yet its session
 * holds memory all the same.
 */
export async function measureSessionBytes(): Promise<number> {
  const rss0 = process.memoryUsage.rss();
  const sessions = [];
  for (let i = 0; i < kProbeSessions; i++) sessions.push(await ort.InferenceSession.create(kIdentityModel, kOptions));
  const each = Math.max(0, process.memoryUsage.rss() - rss0) / kProbeSessions;
  for (const s of sessions) await s.release();
  return Math.round(each);
}
