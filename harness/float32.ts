/** The bytes of `values` as float32 in this machine's order (little-endian on every platform the server runs on): tensor bodies, raw gRPC contents, .npy data. */
export function f32(values: readonly number[]): Buffer {
  return Buffer.from(Float32Array.from(values).buffer);
}
