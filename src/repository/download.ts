/**
 * Streams one object body to a file: constant memory whatever the model's size, a watchdog that
 * fails a body that stops arriving (the SDK's timeouts end once the headers are in), and the
 * checks that tell a complete copy from a cut one: the byte count and, for a single-part upload,
 * the MD5 that S3 uses as its ETag.
 */
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

export class DownloadStalled extends Error {
  override readonly name = 'TimeoutError';
}

export class DownloadIncomplete extends Error {
  override readonly name = 'IncompleteBody';
}

/** A plain-MD5 ETag (multipart uploads have "<md5>-<parts>", which is not the content's MD5). */
const kMd5Etag = /^"?([0-9a-f]{32})"?$/i;

export async function downloadTo(
  file: string,
  body: Readable,
  expected: { size: number; etag: string },
  idleMs: number,
  signal: AbortSignal,
): Promise<number> {
  const md5 = createHash('md5');
  let bytes = 0;
  // eslint-disable-next-line prefer-const -- assigned after the stream that clears it is built
  let timer: NodeJS.Timeout | undefined;
  const tap = new Transform({
    transform(chunk: Buffer, _enc, done) {
      bytes += chunk.length;
      md5.update(chunk);
      timer?.refresh();
      done(null, chunk);
    },
  });
  timer = setTimeout(() => tap.destroy(new DownloadStalled(`no bytes for ${idleMs} ms`)), idleMs);
  try {
    await pipeline(body, tap, createWriteStream(file, { flags: 'wx' }), { signal });
  } finally {
    clearTimeout(timer);
  }
  if (expected.size >= 0 && bytes !== expected.size) {
    throw new DownloadIncomplete(`got ${bytes} of ${expected.size} bytes`);
  }
  const etagMd5 = kMd5Etag.exec(expected.etag)?.[1];
  if (etagMd5 && etagMd5.toLowerCase() !== md5.digest('hex')) {
    throw new DownloadIncomplete('the content does not match its ETag');
  }
  return bytes;
}
