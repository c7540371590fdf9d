import assert from 'node:assert/strict';
import { statfsSync } from 'node:fs';
import path from 'node:path';
import { asyncReads, dirReadsFor, isLocalFileSystem, syncReads } from '../../src/artifacts/dir-reads';
import { useTempDir } from './helpers';

describe('dir-reads: which reads a server uses for its model roots', () => {
  const tmp = useTempDir('dir-reads-');

  it('counts disks, tmpfs and overlayfs as local, and NFS, CIFS and FUSE as not', () => {
    for (const local of [0xef53, 0x58465342, 0x9123683e, 0x01021994, 0x794c7630])
      assert.equal(isLocalFileSystem(local), true);
    // NFS (EFS), CIFS, SMB2, FUSE (s3 mounts), Ceph
    for (const remote of [0x6969, 0xff534d42, 0xfe534d42, 0x65735546, 0x00c36400])
      assert.equal(isLocalFileSystem(remote), false);
  });

  it('reads asynchronously when no root is given', async () => {
    assert.equal(await dirReadsFor([]), asyncReads);
  });

  it("judges a root that does not exist yet by its nearest existing parent's file system", async () => {
    // Two parents whose file system Linux fixes, whatever the machine's disks: /dev/shm is tmpfs
    // (local), /proc is procfs (not a file system models come from).
    assert.equal(statfsSync('/dev/shm').type, 0x01021994, '/dev/shm is tmpfs');
    assert.equal(statfsSync('/proc').type, 0x9fa0, '/proc is procfs');
    const underShm = path.join('/dev/shm', `mme-absent-${process.pid}`, 'not', 'yet', 'mounted');
    const underProc = path.join('/proc', 'mme-absent', 'not', 'yet', 'mounted');
    assert.equal(await dirReadsFor([underShm]), syncReads);
    assert.equal(await dirReadsFor(['/dev/shm', underShm]), syncReads);
    assert.equal(await dirReadsFor([underProc]), asyncReads);
    assert.equal(await dirReadsFor([underShm, underProc]), asyncReads);
  });

  it('gives the same answers and the same errno in both forms', async () => {
    for (const reads of [asyncReads, syncReads]) {
      assert.equal(await reads.realpath(tmp()), await asyncReads.realpath(tmp()));
      assert.equal((await reads.stat(tmp())).isDirectory(), true);
      await assert.rejects(reads.lstat(path.join(tmp(), 'absent')), { code: 'ENOENT' });
      await assert.rejects(
        reads.readNoFollow(path.join(tmp(), 'absent'), () => undefined),
        { code: 'ENOENT' },
      );
    }
  });
});
