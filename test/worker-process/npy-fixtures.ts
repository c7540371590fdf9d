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
