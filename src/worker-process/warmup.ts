import * as ort from 'onnxruntime-node';

/**
 * A 70-byte ONNX graph (y = Identity(x), float32[1]). Creating and running it once initialises
 * onnxruntime's environment (~20 ms the first time in a process), so a worker started ahead of
 * need pays that before any model is assigned to it.
 */
const kIdentityModel = Buffer.from('CAg6PAoQCgF4EgF5IghJZGVudGl0eRIGd2FybXVwWg8KAXgSCgoICAESBAoCCAFiDwoBeRIKCggIARIECgIIAUIECgAQDQ==', 'base64');

export async function warmUpRuntime(): Promise<void> {
  const session = await ort.InferenceSession.create(kIdentityModel, { intraOpNumThreads: 1, interOpNumThreads: 1 });
  await session.run({ x: new ort.Tensor('float32', Float32Array.of(1), [1]) });
  await session.release();
}
