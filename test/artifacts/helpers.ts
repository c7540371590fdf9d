import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import * as tar from 'tar';
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

export interface TarEntrySpec {
  path: string;
  /** Default 'File'. */
  type?: tar.types.EntryTypeName;
  data?: string | Uint8Array;
  linkpath?: string;
  mode?: number;
}

/**
 * Writes tar headers by hand, because node-tar's creator refuses (or sanitises) exactly the entries an
 * attacker would craft: '..' paths, absolute paths, links to anywhere, devices.
 */
export function tarBytes(entries: readonly TarEntrySpec[]): Buffer {
  const blocks: Buffer[] = [];
  for (const e of entries) {
    const type = e.type ?? 'File';
    const data = Buffer.from(e.data ?? '');
    const header = new tar.Header({
      path: e.path,
      type,
      size: data.length,
      mode: e.mode ?? (type === 'Directory' ? 0o755 : 0o644),
      linkpath: e.linkpath,
      uid: 0,
      gid: 0,
      mtime: new Date(0),
    });
    const block = Buffer.alloc(512);
    if (header.encode(block, 0)) throw new Error(`entry ${e.path} needs a PAX header, which this builder does not write`);
    blocks.push(block, data, Buffer.alloc((512 - (data.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024)); // end-of-archive marker: two zero blocks
  return Buffer.concat(blocks);
}

export function tgz(entries: readonly TarEntrySpec[]): Buffer {
  return gzipSync(tarBytes(entries));
}
