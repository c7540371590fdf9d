/** Tar and tar.gz model archives built byte by byte, well-formed or not, for the artifact tests and long runs. */
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import { createGzip, gzipSync } from 'node:zlib';
import * as tar from 'tar';

export interface TarEntrySpec {
  path: string;
  /** Default 'File'. */
  type?: tar.types.EntryTypeName;
  data?: string | Uint8Array;
  linkpath?: string;
  mode?: number;
  /** Sent as a PAX extended header that overrides `path`: long, all-digit or NUL-carrying names. */
  paxPath?: string;
}

/**
 * One 512-byte tar header declaring `size` bytes, whatever data follows it: bombs declare far more
 * than they carry. Sizes past 8 GiB are written in base-256, which node-tar reads like any other.
 */
export function tarHeader(e: TarEntrySpec, size: number): Buffer {
  const type = e.type ?? 'File';
  const header = new tar.Header({
    path: e.path,
    type,
    size,
    mode: e.mode ?? (type === 'Directory' ? 0o755 : 0o644),
    linkpath: e.linkpath,
    uid: 0,
    gid: 0,
    mtime: new Date(0),
  });
  const block = Buffer.alloc(512);
  if (header.encode(block, 0) && size < 8 * 2 ** 30)
    throw new Error(`entry ${e.path} needs a PAX header: give it a paxPath`);
  return block;
}

/**
 * Writes tar headers by hand, because node-tar's creator refuses (or sanitises) exactly the entries an
 * attacker would craft: '..' paths, absolute paths, links to anywhere, devices.
 */
export function tarBytes(entries: readonly TarEntrySpec[]): Buffer {
  const blocks: Buffer[] = [];
  for (const e of entries) {
    const data = Buffer.from(e.data ?? '');
    if (e.paxPath !== undefined) blocks.push(new tar.Pax({ path: e.paxPath }).encode());
    blocks.push(tarHeader(e, data.length), data, Buffer.alloc((512 - (data.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024)); // end-of-archive marker: two zero blocks
  return Buffer.concat(blocks);
}

export function tgz(entries: readonly TarEntrySpec[]): Buffer {
  return gzipSync(tarBytes(entries));
}

/**
 * Streams tar blocks through gzip at `level` into `file`, then the end-of-archive marker: for
 * archives too large to build in memory (a million entries, a gigabyte of padding).
 */
export async function writeTgz(file: string, blocks: Iterable<Buffer>, level: number): Promise<void> {
  const gz = createGzip({ level });
  const done = pipeline(gz, createWriteStream(file));
  for (const block of blocks) if (!gz.write(block)) await once(gz, 'drain');
  gz.end(Buffer.alloc(1024));
  await done;
}
