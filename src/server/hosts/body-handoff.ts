/**
 * Where the server's body rings (body-ring.ts) live: body_handoff_dir, /dev/shm, or a tmpfs $TMPDIR;
 * or nowhere (Docker's /dev/shm is 64 MB), and then bodies go over the sockets. Each ring file is
 * unlinked once both ends have it open; a killed server's leftovers (named with its pid) the next removes.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ServerConfig } from '../../config/types';
import { BodyRing } from './body-ring';

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
    if (m && !alive(Number(m[1]))) fs.rmSync(path.join(dir, name), { force: true });
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
