import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * Reference files written by NumPy itself (test/fixtures/npy/make_reference.py), checked in so the
 * tests need no Python. Compiled to dist/test/worker/, so the repo root is three levels up.
 */
export const NPY_DIR = path.resolve(__dirname, '../../../test/fixtures/npy');

export function npyFile(name: string): Buffer {
  return readFileSync(path.join(NPY_DIR, name));
}

/**
 * A little-endian float32 .npy in C order read as NumPy's format document describes it, not with the
 * server's parser: for checking the server's .npy answers against something it did not write.
 */
export function readFloat32Npy(bytes: Buffer): { shape: number[]; values: number[] } {
  assert.equal(bytes.subarray(0, 6).toString('latin1'), '\x93NUMPY', 'the .npy magic string');
  const major = bytes[6];
  const start = major === 1 ? 10 : 12;
  const headerEnd = start + (major === 1 ? bytes.readUInt16LE(8) : bytes.readUInt32LE(8));
  const header = bytes.subarray(start, headerEnd).toString('latin1');
  assert.match(header, /'descr': '<f4'/);
  assert.match(header, /'fortran_order': False/);
  const shape = /'shape': \(([^)]*)\)/
    .exec(header)![1]
    .split(',')
    .map((d) => d.trim())
    .filter(Boolean)
    .map(Number);
  const data = bytes.subarray(headerEnd);
  assert.equal(data.length, 4 * shape.reduce((a, b) => a * b, 1), `${data.length} data bytes for shape (${shape})`);
  return { shape, values: Array.from({ length: data.length / 4 }, (_, i) => data.readFloatLE(4 * i)) };
}
