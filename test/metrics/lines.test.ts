/**
 * LineSink (src/metrics/lines.ts), the sink of the text formats (EMF, MMS): each interval's lines
 * appended to a file (or stdout), nothing written for an empty interval, and a file it cannot write
 * costing only its own lines, logged once.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { LineSink } from '../../src/metrics/lines';
import type { Snapshot } from '../../src/metrics/interval';
import { tempDir } from '../../harness/test-server';
import { waitFor } from '../../harness/process-probes';

const snapshot = (timestampMs: number): Snapshot => ({ timestampMs, series: [] });

describe('metrics/lines: interval lines to a file', () => {
  it('appends each interval as its lines, to what the file held, and writes nothing for an interval without lines', async () => {
    const file = path.join(tempDir('mme-lines-'), 'metrics.log');
    fs.writeFileSync(file, 'kept\n');
    const sink = new LineSink(
      'emf',
      file,
      (s) => (s.timestampMs === 0 ? [] : [`a ${s.timestampMs}`, `b ${s.timestampMs}`]),
      () => {
        throw new Error('nothing to log');
      },
    );
    sink.write(snapshot(1));
    sink.write(snapshot(0));
    sink.write(snapshot(2));
    await sink.close(5000);
    assert.equal(fs.readFileSync(file, 'utf8'), 'kept\na 1\nb 1\na 2\nb 2\n');
    assert.equal(sink.dropped, 0);
  });

  it('drops its own lines, logging once, when its file cannot be written; the caller never sees an error', async () => {
    const dir = tempDir('mme-lines-');
    const logged: string[] = [];
    // A directory where the file would be: opening it for append fails (EISDIR).
    const sink = new LineSink(
      'mms',
      dir,
      () => ['one', 'two'],
      (l) => logged.push(l),
    );
    await waitFor(() => logged.length > 0, 'the open failure to be logged');
    sink.write(snapshot(1));
    sink.write(snapshot(2));
    assert.equal(sink.dropped, 4);
    assert.equal(logged.length, 1);
    assert.match(logged[0], /^metrics: mms cannot write .*: .*; its lines are dropped from now on$/);
    await sink.close(100);
  });
});
