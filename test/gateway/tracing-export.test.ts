/**
 * ReportedExporter (gateway/tracing-export.ts): a collector that is down is one WARN line naming the
 * endpoint, the reason and the spans dropped, then at most one a minute (virtual clock), and one
 * line when it answers again; the span processor is never handed the failure.
 */
import assert from 'node:assert/strict';
import type { LogFields } from '../../src/logger';
import { exportUrl, kReportEveryMs, ReportedExporter, type ExportResult } from '../../src/gateway/tracing-export';
import { VirtualClock } from '../helpers/virtual-clock';

/** An exporter whose next answers the test sets: down (an ECONNREFUSED) or up. */
class FakeExporter {
  down = true;
  export(_spans: string[], done: (r: ExportResult) => void): void {
    done(this.down ? { code: 1, error: new Error('connect ECONNREFUSED 127.0.0.1:4318\n    at stack') } : { code: 0 });
  }
  shutdown(): Promise<void> {
    return Promise.resolve();
  }
}

describe('ReportedExporter', () => {
  it('a collector that is down: one WARN line naming endpoint, reason and spans dropped, then at most once a minute; one line when it is back', () => {
    const clock = new VirtualClock();
    const inner = new FakeExporter();
    const lines: Array<{ line: string; level?: string }> = [];
    const exporter = new ReportedExporter(
      inner,
      'http://127.0.0.1:4318/v1/traces',
      (line: string, fields?: LogFields) => lines.push({ line, level: fields?.level }),
      clock,
    );
    const results: number[] = [];
    const send = (n: number) => exporter.export(Array.from({ length: n }, String), (r) => results.push(r.code));
    send(3);
    assert.deepEqual(lines, [
      {
        line: 'tracing: cannot export to http://127.0.0.1:4318/v1/traces (connect ECONNREFUSED 127.0.0.1:4318): 3 spans dropped; said again at most once a minute while it lasts',
        level: 'warn',
      },
    ]);
    for (let i = 0; i < 10; i++) {
      clock.advance(5_000);
      send(2);
    }
    assert.equal(lines.length, 1, 'nothing more inside the minute');
    clock.advance(kReportEveryMs - 50_000);
    send(1);
    assert.equal(lines.length, 2);
    assert.match(lines[1].line, /: 21 spans dropped since the last line;/);
    inner.down = false;
    send(4);
    assert.deepEqual(lines[2], {
      line: 'tracing: export to http://127.0.0.1:4318/v1/traces works again; 24 spans were dropped in all',
      level: 'info',
    });
    send(4);
    assert.equal(lines.length, 3);
    assert.ok(
      results.every((code) => code === 0),
      'the processor never hands a failure to the SDK error handler',
    );
  });

  it('names the endpoint the exporter uses: the key, else OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else OTEL_EXPORTER_OTLP_ENDPOINT, else its default', () => {
    assert.equal(exportUrl('http://c:4318/', {}), 'http://c:4318/v1/traces');
    assert.equal(exportUrl(null, { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://t/x' }), 'http://t/x');
    assert.equal(exportUrl(null, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://e' }), 'http://e/v1/traces');
    assert.equal(exportUrl(null, {}), 'http://localhost:4318/v1/traces');
  });
});
