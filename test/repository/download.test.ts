/**
 * downloadTo (src/repository/download.ts): an object body streamed to a new file, told complete
 * from cut by its byte count and, for a plain-MD5 ETag, its content; a body that stops arriving
 * fails on its watchdog; a file already there is never overwritten.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { DownloadIncomplete, DownloadStalled, downloadTo } from '../../src/repository/download';
import { tempDir } from '../../harness/test-server';

const content = Buffer.from('the model bytes, in three pieces');
const md5 = `"${createHash('md5').update(content).digest('hex')}"`;
const body = () => Readable.from([content.subarray(0, 5), content.subarray(5, 20), content.subarray(20)]);
const fresh = () => path.join(tempDir('mme-download-'), 'model.onnx');
const never = new AbortController().signal;

describe('repository/download: one object body to a file', () => {
  it('writes the body and answers its size, checking the MD5 ETag and ignoring a multipart one', async () => {
    for (const etag of [md5, md5.toUpperCase(), '"0123456789abcdef0123456789abcdef-3"', '']) {
      const file = fresh();
      assert.equal(await downloadTo(file, body(), { size: content.length, etag }, 60_000, never), content.length);
      assert.deepEqual(fs.readFileSync(file), content);
    }
    // Size unknown (-1): only the ETag checks it.
    assert.equal(await downloadTo(fresh(), body(), { size: -1, etag: md5 }, 60_000, never), content.length);
  });

  it('refuses a body cut short or too long, and one whose content does not match its ETag', async () => {
    await assert.rejects(downloadTo(fresh(), body(), { size: content.length + 1, etag: md5 }, 60_000, never), (err) => {
      assert.ok(err instanceof DownloadIncomplete);
      assert.equal(err.message, `got ${content.length} of ${content.length + 1} bytes`);
      return true;
    });
    await assert.rejects(
      downloadTo(fresh(), body(), { size: content.length - 1, etag: '' }, 60_000, never),
      DownloadIncomplete,
    );
    await assert.rejects(
      downloadTo(fresh(), body(), { size: content.length, etag: `"${'0'.repeat(32)}"` }, 60_000, never),
      /the content does not match its ETag/,
    );
  });

  it('fails a body that stops arriving on its watchdog, as a timeout', async () => {
    const silent = new PassThrough();
    silent.write(content.subarray(0, 3));
    await assert.rejects(downloadTo(fresh(), silent, { size: content.length, etag: md5 }, 50, never), (err) => {
      assert.ok(err instanceof DownloadStalled);
      assert.equal(err.name, 'TimeoutError');
      assert.equal(err.message, 'no bytes for 50 ms');
      return true;
    });
  });

  it('never overwrites a file that is already there, and stops when aborted', async () => {
    const file = fresh();
    fs.writeFileSync(file, 'kept');
    await assert.rejects(downloadTo(file, body(), { size: content.length, etag: md5 }, 60_000, never), {
      code: 'EEXIST',
    });
    assert.equal(fs.readFileSync(file, 'utf8'), 'kept');
    const stop = new AbortController();
    const held = new PassThrough();
    const download = downloadTo(fresh(), held, { size: content.length, etag: md5 }, 60_000, stop.signal);
    stop.abort();
    await assert.rejects(download, { name: 'AbortError' });
  });
});
