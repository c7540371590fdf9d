/**
 * The access log line (src/http/request-id.ts): MMS's shape, the request id, and a url that is
 * client text escaped and capped so that it cannot forge a line of its own.
 */
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { accessLine } from '../../src/http/request-id';

const req = (url: string, method = 'POST') =>
  ({
    url,
    method,
    httpVersion: '1.1',
    socket: { remoteAddress: '10.0.0.7', remotePort: 51234 },
  }) as unknown as IncomingMessage;

describe('http/request-id: the access log line', () => {
  it("is MMS's shape with the status, the milliseconds rounded and the request id", () => {
    assert.equal(
      accessLine(req('/models/m/invoke'), 200, 12.6, 'r-1'),
      'ACCESS /10.0.0.7:51234 "POST /models/m/invoke HTTP/1.1" 200 13 request-id=r-1',
    );
    const gone = { ...req('/ping', 'GET'), socket: {} } as IncomingMessage;
    assert.equal(accessLine(gone, 200, 0.2, 'r-2'), 'ACCESS /-:- "GET /ping HTTP/1.1" 200 0 request-id=r-2');
  });

  it('escapes control characters and quotes in the url, and cuts it at 200 characters', () => {
    const forged = accessLine(req('/x\nACCESS /1.2.3.4:1 "GET /admin HTTP/1.1" 200 0'), 404, 1, 'r');
    assert.equal(forged.split('\n').length, 1, 'one line');
    assert.ok(forged.includes('/x\\nACCESS /1.2.3.4:1 \\"GET /admin'));
    const long = accessLine(req(`/${'a'.repeat(1000)}`), 404, 1, 'r');
    assert.ok(long.includes(`"POST /${'a'.repeat(199)}… HTTP/1.1"`), long);
  });
});
