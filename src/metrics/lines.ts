/** A sink that renders each interval as text lines (EMF, MMS) and appends them to stdout or a file. */
import fs from 'node:fs';
import type { Writable } from 'node:stream';
import { within } from '../util/within';
import type { Snapshot } from './interval';
import type { IntervalSink } from './sink';

/** Past this much unwritten text the destination is not keeping up: new lines are dropped, not queued. */
const kMaxPendingBytes = 1 << 20;

export class LineSink implements IntervalSink {
  dropped = 0;
  readonly #stream: Writable;
  readonly #ownsStream: boolean;
  #broken = false;

  /** destination: 'stdout' or a file path (appended to, created if missing). */
  constructor(
    readonly name: string,
    destination: string,
    readonly render: (snapshot: Snapshot) => string[],
    log: (line: string) => void,
  ) {
    this.#ownsStream = destination !== 'stdout';
    this.#stream = this.#ownsStream ? fs.createWriteStream(destination, { flags: 'a' }) : process.stdout;
    if (this.#ownsStream) {
      // An unwritable file costs this sink its output, never the server.
      this.#stream.on('error', (err) => {
        if (!this.#broken)
          log(`metrics: ${name} cannot write ${destination}: ${err.message}; its lines are dropped from now on`);
        this.#broken = true;
      });
    }
  }

  write(snapshot: Snapshot): void {
    const lines = this.render(snapshot);
    if (lines.length === 0) return;
    if (this.#broken || this.#stream.writableLength > kMaxPendingBytes) {
      this.dropped += lines.length;
      return;
    }
    this.#stream.write(`${lines.join('\n')}\n`);
  }

  async close(timeoutMs: number): Promise<void> {
    if (this.#ownsStream) await within(new Promise<void>((resolve) => this.#stream.end(resolve)), timeoutMs, undefined);
  }
}
