/**
 * Just enough S3 for a store that stalls mid-body: an empty listing (no model directory), then
 * `<key>.tar.gz` answered with its full Content-Length but only the first `sent` bytes, after
 * which the connection stays open and silent. Every other key is NoSuchKey.
 */
import { LocalAwsEndpoint } from '../helpers/aws-endpoint';

export async function startStallingS3(archiveKey: string, declared: number, sent: number): Promise<LocalAwsEndpoint> {
  return LocalAwsEndpoint.start((req, res) => {
    const url = new URL(req.url, 'http://x');
    if (url.searchParams.get('list-type') === '2') {
      res.writeHead(200, { 'content-type': 'application/xml' });
      res.end(
        '<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><IsTruncated>false</IsTruncated><KeyCount>0</KeyCount></ListBucketResult>',
      );
    } else if (url.pathname.endsWith(`/${archiveKey}`)) {
      res.writeHead(200, { 'content-length': String(declared), etag: '"0123456789abcdef0123456789abcdef"' });
      res.write(Buffer.alloc(sent, 1));
    } else {
      res.writeHead(404, { 'content-type': 'application/xml' });
      res.end(
        '<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message></Error>',
      );
    }
  });
}
