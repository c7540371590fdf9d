/**
 * Safe extraction of an untrusted model .tar.gz with node-tar 7 (reference: reliability-security.md §2),
 * inside the short-lived extraction child (extract-child.ts).
 */
import { createReadStream } from 'node:fs';
import { lstat, readdir } from 'node:fs/promises';
import path from 'node:path';
import { Transform } from 'node:stream';
import { createGunzip } from 'node:zlib';
import type { ReadEntry } from 'tar';
import { invalidModel, isMmeError, MmeError, quote } from '../errors';
import { diskFullError, errnoOf, fsFailure, isDiskFull } from './fs-errors';

export interface ArchiveLimits {
  maxEntries?: number;
  /** Most bytes the entries may declare in total. */
  maxTotalBytes?: number;
  /** Highest uncompressed:compressed ratio, enforced once past compressionRatioFloor. */
  maxCompressionRatio?: number;
  /** Uncompressed bytes after which the ratio is enforced: small archives compress far better. */
  compressionRatioFloor?: number;
}

export const DEFAULT_ARCHIVE_LIMITS: Readonly<Required<ArchiveLimits>> = Object.freeze({
  maxEntries: 10_000,
  maxTotalBytes: 4 * 2 ** 30,
  maxCompressionRatio: 200,
  compressionRatioFloor: 10 * 2 ** 20,
});

// Links caused nearly every node-tar escape; devices and FIFOs have no place in a model.
const ALLOWED_TYPES = new Set(['File', 'OldFile', 'ContiguousFile', 'Directory']);

function formatBytes(n: number): string {
  return n >= 2 ** 30
    ? `${+(n / 2 ** 30).toFixed(2)} GiB`
    : n >= 2 ** 20
      ? `${+(n / 2 ** 20).toFixed(2)} MiB`
      : `${n} bytes`;
}

/** The client-facing error, without the extraction path. */
function classify(err: unknown, dest: string): MmeError {
  if (isMmeError(err)) return err;
  if (isDiskFull(err)) return diskFullError('extracting the model archive', err);
  const code = errnoOf(err) ?? '';
  const message = ((err as Error | null)?.message ?? String(err)).split(dest).join('<archive>');
  // zlib errors (Z_*) and node-tar's own (TAR_*) mean a malformed archive; other errno values are ours.
  if (code.startsWith('Z_') || code.startsWith('TAR_') || code === 'ERR_ZLIB_BINDING_CLOSED') {
    return new MmeError('MME_ERR_INVALID_MODEL', `not a valid .tar.gz archive: ${message}`, { cause: err });
  }
  return fsFailure('extracting the model archive', err);
}

/** Into the existing, empty directory `dest`; rejects with an MmeError. */
export async function extractArchive(archive: string, dest: string, limits: Required<ArchiveLimits>): Promise<void> {
  // Loaded with the first archive: a server fed directories never holds node-tar.
  const { Unpack } = await import('tar');
  return new Promise<void>((resolve, reject) => {
    let settled = false;
    let entries = 0;
    let declaredBytes = 0;
    let inflatedBytes = 0;

    const source = createReadStream(archive);
    const gunzip = createGunzip();
    const fail = (err: unknown): void => {
      if (settled) return;
      settled = true;
      const error = classify(err, dest);
      source.destroy();
      gunzip.destroy();
      meter.destroy();
      unpack.abort(error);
      reject(error);
    };

    // node-tar's own ratio check starts at the first byte, which rejects small, very compressible
    // archives; this one starts at compressionRatioFloor and counts compressed bytes read so far.
    const meter = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        inflatedBytes += chunk.length;
        const ratio = inflatedBytes / Math.max(1, source.bytesRead);
        if (inflatedBytes > limits.compressionRatioFloor && ratio > limits.maxCompressionRatio) {
          callback(invalidModel(`archive expands more than ${limits.maxCompressionRatio}:1 (a decompression bomb?)`));
        } else {
          callback(null, chunk);
        }
      },
    });

    // Returning false alone would silently skip the entry; abort fails the whole load instead.
    // Never throw here: node-tar calls the filter synchronously from write().
    const refuse = (message: string): false => {
      fail(invalidModel(message));
      return false;
    };
    const unpack = new Unpack({
      cwd: dest,
      strict: true, // every recoverable warning ('..', stripped absolute path, too deep) becomes an error
      preservePaths: false,
      preserveOwner: false, // its default is true when running as root, which SageMaker does
      maxDepth: 32,
      // Only reached if the decompressed tar is itself gzipped: this module already gunzipped the outer layer.
      maxDecompressionRatio: limits.maxCompressionRatio,
      // The gzip layer is removed above; node-tar must not guess at other codecs from the tar bytes.
      brotli: false,
      zstd: false,
      filter: (p, entry) => {
        const e = entry as ReadEntry;
        if (!ALLOWED_TYPES.has(e.type))
          return refuse(`archive entry ${quote(p)} is a ${e.type}; only files and directories are allowed`);
        if (p.includes('\0') || p.startsWith('/') || p.split(/[\\/]/).includes('..')) {
          return refuse(`archive entry ${quote(p)} is an absolute path or leads outside the archive`);
        }
        if (++entries > limits.maxEntries) return refuse(`archive holds more than ${limits.maxEntries} entries`);
        declaredBytes += e.size ?? 0;
        if (declaredBytes > limits.maxTotalBytes)
          return refuse(`archive expands beyond ${formatBytes(limits.maxTotalBytes)}`);
        // Archive modes are not trusted (setuid bits, unreadable files): keep only "executable or not".
        e.mode = e.type === 'Directory' || (e.mode ?? 0) & 0o111 ? 0o755 : 0o644;
        return true;
      },
    });

    unpack.on('error', fail);
    unpack.on('close', () => {
      if (settled) return;
      verifyTree(dest).then(() => {
        settled = true;
        resolve();
      }, fail);
    });
    source.on('error', fail);
    gunzip.on('error', fail);
    meter.on('error', fail);
    // Unpack is node-tar's own writable (minipass-style), which pipe() drives like any Node writable.
    source.pipe(gunzip).pipe(meter).pipe(unpack);
  });
}

/** What landed on disk, independently of the filter: defence against a parser differential letting a link through. */
async function verifyTree(dir: string): Promise<void> {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    const st = await lstat(p);
    if (st.isDirectory()) await verifyTree(p);
    else if (!st.isFile() || st.nlink !== 1)
      throw invalidModel(`archive produced ${quote(entry.name)}, which is not a plain file or directory`);
  }
}
