/**
 * The file-system reads that find a model in a directory, asynchronous or synchronous. On a local
 * file system each of a load's 7 reads is a few µs, less than the thread-pool hand-off: with 8 loads
 * in flight, resolving a directory took 12 ms instead of 1.2 (bench-results/part21-model-count).
 * On a network or FUSE file system (EFS, NFS, s3 mounts) a read can hang: there they stay asynchronous.
 */
import fs, { constants, type Dirent, type Stats } from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';

export interface DirReads {
  realpath(p: string): Promise<string>;
  stat(p: string): Promise<Stats>;
  lstat(p: string): Promise<Stats>;
  readdir(p: string): Promise<Dirent[]>;
  /** The text of `p`, opened without following a link (ELOOP); `check` sees its stat first and throws to refuse it. */
  readNoFollow(p: string, check: (st: Stats) => void): Promise<string>;
}

export const asyncReads: DirReads = {
  realpath: (p) => fsp.realpath(p),
  stat: (p) => fsp.stat(p),
  lstat: (p) => fsp.lstat(p),
  readdir: (p) => fsp.readdir(p, { withFileTypes: true }),
  async readNoFollow(p, check) {
    const fh = await fsp.open(p, constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      check(await fh.stat());
      return await fh.readFile('utf8');
    } finally {
      await fh.close();
    }
  },
};

// Promises all the same, so that callers need no second path.
export const syncReads: DirReads = {
  realpath: async (p) => fs.realpathSync.native(p),
  stat: async (p) => fs.statSync(p),
  lstat: async (p) => fs.lstatSync(p),
  readdir: async (p) => fs.readdirSync(p, { withFileTypes: true }),
  async readNoFollow(p, check) {
    const fd = fs.openSync(p, constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      check(fs.fstatSync(fd));
      return fs.readFileSync(fd, 'utf8');
    } finally {
      fs.closeSync(fd);
    }
  },
};

/** statfs f_type of the file systems whose reads never leave the machine (linux/magic.h). */
const kLocalFileSystems = new Set([
  0xef53, // ext2/3/4
  0x58465342, // xfs
  0x9123683e, // btrfs
  0x01021994, // tmpfs
  0x858458f6, // ramfs
  0x794c7630, // overlayfs (a container's own layers)
  0xf2f52010, // f2fs
  0x2fc12fc1, // zfs
]);

export function isLocalFileSystem(type: number): boolean {
  return kLocalFileSystems.has(type);
}

/** Synchronous reads when every root is on a local file system; a root not there yet is judged by its nearest parent. */
export async function dirReadsFor(roots: readonly string[]): Promise<DirReads> {
  if (roots.length === 0) return asyncReads;
  const local = await Promise.all(
    roots.map((r) =>
      statfsOfNearest(r).then(
        (st) => isLocalFileSystem(st.type),
        () => false,
      ),
    ),
  );
  return local.every(Boolean) ? syncReads : asyncReads;
}

async function statfsOfNearest(p: string): Promise<fs.StatsFs> {
  let at = path.resolve(p);
  for (;;) {
    try {
      return await fsp.statfs(at);
    } catch (err) {
      const parent = path.dirname(at);
      if (parent === at) throw err;
      at = parent;
    }
  }
}
