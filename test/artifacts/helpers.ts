import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ErrorCode, isMmeError } from '../../src/errors';

/** A fresh temp dir per test, removed afterwards. Call at describe level. */
export function useTempDir(prefix: string): () => string {
  let dir = '';
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  });
  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });
  return () => dir;
}

export async function assertMmeError(promise: Promise<unknown>, code: ErrorCode, message?: RegExp): Promise<void> {
  await assert.rejects(promise, (err: unknown) => {
    assert.ok(isMmeError(err), `expected an MmeError, got ${String(err)}`);
    assert.equal(err.code, code, err.message);
    if (message) assert.match(err.message, message);
    return true;
  });
}
