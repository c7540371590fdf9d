/**
 * docs/security.md's self-signed certificate recipe as written: its openssl command, then a server
 * on that pair, then its curl commands, which trust the certificate by IP and by name (the SAN).
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { startTestServer, tempDir } from '../../harness/test-server';
import { bash, codeBlocks } from '../helpers/docs-examples';

/** The page's indented code blocks (inside a list item) with the list's indent taken off. */
function recipe(): string[] {
  return codeBlocks('docs/security.md', 'sh').map((b) => b.replace(/^ {2}/gm, ''));
}

describe('docs/security.md: the self-signed certificate recipe', () => {
  it('openssl as written makes a pair that curl accepts by IP and by name', async function () {
    this.timeout(60_000);
    const blocks = recipe().filter((b) => /openssl req|curl --cacert tls\.crt/.test(b));
    assert.equal(blocks.length, 2, 'the page has the openssl block and the curl block');
    const dir = tempDir('mme-tls-recipe-');
    const made = await bash(blocks[0], dir);
    assert.equal(made.code, 0, made.stderr);
    const t = await startTestServer(
      `inference_address=https://127.0.0.1:0\nmanagement_address=https://127.0.0.1:0\ntls_cert_file=${path.join(dir, 'tls.crt')}\ntls_key_file=${path.join(dir, 'tls.key')}`,
    );
    try {
      const port = /:(\d+)$/.exec(t.url)![1];
      const run = await bash(blocks[1].replaceAll(':8080', `:${port}`), dir);
      assert.equal(run.code, 0, run.stdout + run.stderr);
    } finally {
      await t.close();
    }
  });
});
