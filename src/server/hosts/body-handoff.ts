/**
 * Large request bodies through shared memory. Each worker process has a body ring, a
 * shared-memory file (its fd 4) that large bodies are written into, one pwritev per batch; the
 * Infer frame carries only where each is (protocol/ring-region.ts). Through the socket a 600 KB
 * body took several wake-ups of both processes, and the server's 64 KiB socket reads drove
 * back-to-back mark-compacts. A batch's space is reused once it is answered in full; one that does
 * not fit, or whose write fails, goes in its frame.
 *
 * The rings live in body_handoff_dir, /dev/shm, or a tmpfs $TMPDIR; or nowhere (Docker's /dev/shm
 * is 64 MB), and then bodies go over the sockets. Each ring file is unlinked once both ends have it
 * open; a killed server's leftovers (named with its pid) the next removes.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ServerConfig } from '../../config/types';
import type { InferMessage, InvokeRequest } from '../../protocol/messages';
import { kRegionAlign, kRegionHeaderBytes, regionBytes, regionHeader } from '../../protocol/ring-region';

/**
 * body_handoff_bytes (one ring's size; 0 = off), body_handoff_dir (null = /dev/shm, else a tmpfs
 * $TMPDIR) and body_handoff_min_bytes.
 */
type BodyHandoffSettings = Pick<ServerConfig, 'bodyHandoffBytes' | 'bodyHandoffDir' | 'bodyHandoffMinBytes'>;

const kTmpfsMagic = 0x01021994;
const kPrefix = 'mme-body-';
const kOwnFile = /^mme-body-(\d+)-\d+$/;

export class BodyHandoff {
  /** 0 is the probe's (unusable()). */
  #seq = 1;

  private constructor(
    readonly dir: string,
    private readonly settings: BodyHandoffSettings,
    private readonly log: (line: string) => void,
  ) {}

  /** The handoff for this server, or null (said once in the log) when bodies must go over the sockets. */
  static start(settings: BodyHandoffSettings, log: (line: string) => void): BodyHandoff | null {
    const { bodyHandoffBytes: bytes, bodyHandoffDir } = settings;
    if (bytes === 0) return null;
    const candidates = bodyHandoffDir !== null ? [bodyHandoffDir] : ['/dev/shm', os.tmpdir()];
    const refusals: string[] = [];
    for (const dir of candidates) {
      const why = unusable(dir, bytes, bodyHandoffDir === null && dir !== '/dev/shm');
      if (why === null) {
        removeStale(dir);
        return new BodyHandoff(dir, settings, log);
      }
      refusals.push(`${dir}: ${why}`);
    }
    log(
      `request bodies go to the workers over their sockets: no shared memory for the body rings (${refusals.join('; ')}). ` +
        'Give the container shared memory (docker run --shm-size=256m; in Kubernetes an emptyDir with medium: Memory mounted on /dev/shm) or set body_handoff_dir; body_handoff_bytes=0 turns this message off.',
    );
    return null;
  }

  /** A ring and the read-only descriptor its worker gets, or null (bodies over the socket) if none can be made now. */
  open(): { ring: BodyRing; workerFd: number } | null {
    const file = path.join(this.dir, `${kPrefix}${process.pid}-${this.#seq++}`);
    let fd = -1;
    let workerFd = -1;
    try {
      fd = fs.openSync(file, 'wx+', 0o600);
      workerFd = fs.openSync(file, 'r');
      fs.unlinkSync(file);
      fs.ftruncateSync(fd, this.settings.bodyHandoffBytes);
    } catch (err) {
      fs.rmSync(file, { force: true });
      for (const d of [fd, workerFd]) if (d >= 0) fs.closeSync(d);
      this.log(
        `a worker's body ring could not be made in ${this.dir} (${(err as Error).message}); its bodies go over its socket`,
      );
      return null;
    }
    const { bodyHandoffBytes, bodyHandoffMinBytes } = this.settings;
    const ring = new BodyRing(fd, bodyHandoffBytes, bodyHandoffMinBytes, (err) =>
      this.log(
        `a body ring in ${this.dir} is full (${err.message}); bodies that do not fit go over the socket: give it more shared memory`,
      ),
    );
    return { ring, workerFd };
  }
}

/** One batch's bodies: [start, end); released out of order, reused in order. */
interface Held {
  readonly batchId: number;
  readonly start: number;
  readonly end: number;
  released: boolean;
}

const kZeros = Buffer.alloc(kRegionAlign);

export class BodyRing {
  /** Oldest first: space is reclaimed from the front. */
  readonly #held: Held[] = [];
  #head = 0;
  #closed = false;
  #writeFailed = false;

  /** `onWriteFailed`: told once per ring (tmpfs full); the batch goes over the socket. */
  constructor(
    readonly fd: number,
    readonly bytes: number,
    readonly minBodyBytes: number,
    private readonly onWriteFailed: (err: Error) => void,
  ) {}

  /** The frame to send for `msg`, its large bodies written into the ring; `msg` is left as it is. */
  place(msg: InferMessage): InferMessage {
    if (this.#closed) return msg;
    let need = 0;
    const lengths = msg.requests.map((r) => {
      const n = Buffer.isBuffer(r.body) ? r.body.length : (r.body ?? []).reduce((sum, b) => sum + b.length, 0);
      if (n >= this.minBodyBytes) need += regionBytes(n);
      return n;
    });
    if (need === 0) return msg;
    const start = this.#room(need);
    if (start < 0) return msg;
    const parts: Buffer[] = [];
    let at = start;
    const requests = msg.requests.map((r, i): InvokeRequest => {
      const length = lengths[i];
      if (length < this.minBodyBytes) return r;
      parts.push(regionHeader(r.id, length), ...(Buffer.isBuffer(r.body) ? [r.body] : (r.body ?? [])));
      const pad = regionBytes(length) - (length + kRegionHeaderBytes);
      if (pad > 0) parts.push(kZeros.subarray(0, pad));
      const ring = { offset: at, length };
      at += regionBytes(length);
      return { ...r, body: undefined, ring };
    });
    try {
      if (fs.writevSync(this.fd, parts, start) !== need) throw new Error('short write: the file system is full');
    } catch (err) {
      if (!this.#writeFailed) this.onWriteFailed(err as Error);
      this.#writeFailed = true;
      return msg;
    }
    const held: Held = { batchId: msg.batchId, start, end: start + need, released: false };
    this.#held.push(held);
    this.#head = held.end;
    return { ...msg, requests };
  }

  release(batchId: number): void {
    // Oldest first, as they are mostly answered.
    const held = this.#held.find((h) => h.batchId === batchId && !h.released);
    if (!held) return;
    held.released = true;
    while (this.#held.length > 0 && this.#held[0].released) this.#held.shift();
    if (this.#held.length === 0) this.#head = 0;
  }

  /** Its process is gone: the file's memory goes back to the system with its last descriptor. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#held.length = 0;
    fs.close(this.fd, () => undefined);
  }

  /** Where `n` bytes fit after the head, or from the ring's start when the end has no room; -1 if nowhere. */
  #room(n: number): number {
    if (this.#held.length === 0) return n <= this.bytes ? 0 : -1;
    const tail = this.#held[0].start;
    // head > tail: the used part is [tail, head), free is [head, end) and [0, tail). The start is
    // taken first when it has room: the ring then touches only as many pages as its bodies in
    // flight need, not all of body_handoff_bytes (tmpfs keeps a page once written).
    if (this.#head > tail) {
      if (n <= tail) return 0;
      return this.#head + n <= this.bytes ? this.#head : -1;
    }
    // Wrapped (head ≤ tail; equal when full): free is [head, tail).
    return this.#head + n <= tail ? this.#head : -1;
  }
}

function unusable(dir: string, bytes: number, mustBeTmpfs: boolean): string | null {
  let stats: fs.StatsFs;
  try {
    stats = fs.statfsSync(dir);
    // A real file, not access(2): root passes access checks on any directory that is not read-only.
    const probe = path.join(dir, `${kPrefix}${process.pid}-0`);
    fs.closeSync(fs.openSync(probe, 'wx', 0o600));
    fs.unlinkSync(probe);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code ?? (err as Error).message;
  }
  if (mustBeTmpfs && stats.type !== kTmpfsMagic) return 'not a tmpfs';
  const free = stats.bavail * stats.bsize;
  if (free < 2 * bytes) return `${Math.floor(free / 2 ** 20)} MiB free, less than two rings of body_handoff_bytes`;
  return null;
}

/** Ring files of servers no longer running (killed between a ring's create and unlink). */
function removeStale(dir: string): void {
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) {
    const m = kOwnFile.exec(name);
    try {
      if (m) process.kill(Number(m[1]), 0);
    } catch (err) {
      // EPERM: alive, another user's.
      if ((err as NodeJS.ErrnoException).code !== 'EPERM') fs.rmSync(path.join(dir, name), { force: true });
    }
  }
}
