import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import * as ort from 'onnxruntime-node';
import * as tar from 'tar';
import { DEFAULT_ARCHIVE_LIMITS } from '../../src/artifacts/extract-archive';
import { ArchiveLimits, resolveArtifact } from '../../src/artifacts/model-artifact';
import { ErrorCode } from '../../src/errors';
import { addModel, writeModelDir } from '../../harness/onnx-models';
import { assertMmeError, useTempDir } from './helpers';
import { TarEntrySpec, tgz } from '../../harness/tar-archives';
import { waitFor } from '../../harness/process-probes';
import { skipBecause, userNamespaceProblem } from '../helpers/skip';

const MODEL = addModel();

describe('resolveArtifact: .tar.gz archives', function () {
  this.timeout(20_000);
  const tmp = useTempDir('artifact-archive-');
  const cacheDir = () => path.join(tmp(), 'cache');

  function writeArchive(name: string, bytes: Uint8Array): string {
    const dir = path.join(tmp(), 'archives');
    mkdirSync(dir, { recursive: true });
    const file = path.join(dir, name);
    writeFileSync(file, bytes);
    return file;
  }

  /** Nothing may survive a failed load: not in the cache dir, and nothing escaped next to it. */
  function assertNothingLeft(): void {
    assert.deepEqual(existsSync(cacheDir()) ? readdirSync(cacheDir()) : [], [], 'cache dir is empty');
    assert.deepEqual(
      readdirSync(tmp()).filter((n) => !['cache', 'archives', 'src'].includes(n)),
      [],
      'nothing escaped the cache dir',
    );
  }

  async function rejects(
    entries: TarEntrySpec[] | Buffer,
    code: ErrorCode,
    message: RegExp,
    limits?: ArchiveLimits,
  ): Promise<void> {
    const bytes = Array.isArray(entries) ? tgz(entries) : entries;
    const archive = writeArchive('model.tar.gz', bytes);
    await assertMmeError(resolveArtifact(archive, { cacheDir: cacheDir(), limits }), code, message);
    assertNothingLeft();
  }

  describe('valid archives', () => {
    it('extracts a flat archive into a fresh dir under cacheDir, and dispose() removes it', async () => {
      const archive = writeArchive(
        'm.tar.gz',
        tgz([
          { path: 'model.onnx', data: MODEL },
          { path: 'handler.js', data: 'module.exports = {};' },
          { path: 'model-config.json', data: '{"batchSize": 4}' },
        ]),
      );
      const a = await resolveArtifact(archive, { cacheDir: cacheDir() });
      assert.equal(a.url, archive);
      assert.ok(a.extractedTo);
      assert.equal(path.dirname(a.extractedTo), cacheDir());
      assert.equal(a.dir, a.extractedTo);
      assert.equal(a.onnxPath, path.join(a.extractedTo, 'model.onnx'));
      assert.equal(a.onnxBytes, MODEL.length);
      assert.deepEqual(readFileSync(a.onnxPath), Buffer.from(MODEL));
      assert.equal(a.handlerPath, path.join(a.extractedTo, 'handler.js'));
      assert.deepEqual(a.modelConfig, { batchSize: 4 });
      const s = await ort.InferenceSession.create(a.onnxPath);
      assert.deepEqual(s.inputNames, ['x']);
      await a.dispose();
      await a.dispose();
      assertNothingLeft();
    });

    it('accepts what node-tar itself packs from a model directory, as .tgz, one directory down', async () => {
      const src = writeModelDir(path.join(tmp(), 'src'), 'my-model', MODEL, { 'handler.js': '//' });
      const archive = path.join(tmp(), 'archives', 'm.tgz');
      mkdirSync(path.dirname(archive));
      await tar.c({ gzip: true, file: archive, cwd: path.dirname(src), portable: true }, ['my-model']);
      const a = await resolveArtifact(archive, { cacheDir: cacheDir() });
      assert.equal(a.dir, path.join(a.extractedTo!, 'my-model'));
      assert.equal(a.handlerPath, path.join(a.dir, 'handler.js'));
      await a.dispose();
      assert.deepEqual(readdirSync(cacheDir()), []);
    });

    it('gives every load its own directory', async () => {
      const archive = writeArchive('m.tar.gz', tgz([{ path: 'model.onnx', data: MODEL }]));
      const [a, b] = await Promise.all([0, 1].map(() => resolveArtifact(archive, { cacheDir: cacheDir() })));
      assert.notEqual(a.extractedTo, b.extractedTo);
      await a.dispose();
      assert.ok(existsSync(b.onnxPath));
      await b.dispose();
    });

    it('does not apply the compression-ratio cap below its floor', async () => {
      const archive = writeArchive(
        'm.tar.gz',
        tgz([
          { path: 'model.onnx', data: MODEL },
          { path: 'zeros.bin', data: new Uint8Array(5 * 2 ** 20) },
        ]),
      );
      // 5 MiB of zeros inflate over 1000:1 (past the cap of 200) but stay under the 10 MiB floor.
      assert.ok(5 * 2 ** 20 < DEFAULT_ARCHIVE_LIMITS.compressionRatioFloor);
      const a = await resolveArtifact(archive, { cacheDir: cacheDir() });
      assert.equal(statSync(path.join(a.dir, 'zeros.bin')).size, 5 * 2 ** 20);
      assert.ok(existsSync(a.onnxPath));
      await a.dispose();
    });

    it('drops setuid bits and world-writable modes from archive entries', async () => {
      const archive = writeArchive(
        'm.tar.gz',
        tgz([
          { path: 'model.onnx', data: MODEL, mode: 0o4777 },
          { path: 'run.sh', data: '#!/bin/sh', mode: 0o2775 },
        ]),
      );
      const a = await resolveArtifact(archive, { cacheDir: cacheDir() });
      assert.equal(statSync(a.onnxPath).mode & 0o7777, 0o755);
      assert.equal(statSync(path.join(a.dir, 'run.sh')).mode & 0o7777, 0o755);
      await a.dispose();
    });
  });

  describe('malicious archives are refused with 400 and leave nothing behind', () => {
    const onnx: TarEntrySpec = { path: 'model.onnx', data: MODEL };

    it('a symbolic link made by node-tar from a real link', async () => {
      const src = writeModelDir(path.join(tmp(), 'src'), 'm', MODEL);
      symlinkSync('/etc/passwd', path.join(src, 'passwd'));
      const archive = path.join(tmp(), 'archives', 'm.tar.gz');
      mkdirSync(path.dirname(archive));
      await tar.c({ gzip: true, file: archive, cwd: src }, ['model.onnx', 'passwd']);
      await assertMmeError(
        resolveArtifact(archive, { cacheDir: cacheDir() }),
        'MME_ERR_INVALID_MODEL',
        /"passwd" is a SymbolicLink/,
      );
      assertNothingLeft();
    });

    it('a symbolic link to a directory, then a file written through it', () =>
      rejects(
        [onnx, { path: 'l', type: 'SymbolicLink', linkpath: '/tmp' }, { path: 'l/evil', data: 'x' }],
        'MME_ERR_INVALID_MODEL',
        /SymbolicLink/,
      ));

    it('a hard link to a file outside', () =>
      rejects(
        [onnx, { path: 'passwd', type: 'Link', linkpath: '/etc/passwd' }],
        'MME_ERR_INVALID_MODEL',
        /"passwd" is a Link/,
      ));

    it('a hard link to a file inside', () =>
      rejects(
        [onnx, { path: 'copy.onnx', type: 'Link', linkpath: 'model.onnx' }],
        'MME_ERR_INVALID_MODEL',
        /is a Link/,
      ));

    it('the CVE-2026-26960 symlink chain plus hard link', () =>
      rejects(
        [
          onnx,
          { path: 'a/b/c/up', type: 'SymbolicLink', linkpath: '../..' },
          { path: 'a/b/escape', type: 'SymbolicLink', linkpath: 'c/up/../..' },
          { path: 'exfil', type: 'Link', linkpath: 'a/b/escape/etc/passwd' },
        ],
        'MME_ERR_INVALID_MODEL',
        /SymbolicLink/,
      ));

    it('a character device', () =>
      rejects([onnx, { path: 'null', type: 'CharacterDevice' }], 'MME_ERR_INVALID_MODEL', /CharacterDevice/));

    it('a block device', () =>
      rejects([onnx, { path: 'sda', type: 'BlockDevice' }], 'MME_ERR_INVALID_MODEL', /BlockDevice/));

    it('a FIFO', () => rejects([onnx, { path: 'pipe', type: 'FIFO' }], 'MME_ERR_INVALID_MODEL', /FIFO/));

    for (const p of ['../evil', 'a/../../evil', 'ok/../../../evil', '/abs/evil', '//abs/evil']) {
      it(`the path ${p}`, () =>
        rejects([onnx, { path: p, data: 'pwned' }], 'MME_ERR_INVALID_MODEL', /absolute path or leads outside/));
    }

    it('more entries than maxEntries', () =>
      rejects(
        [onnx, ...Array.from({ length: 30 }, (_, i) => ({ path: `f${i}`, data: '' }))],
        'MME_ERR_INVALID_MODEL',
        /more than 20 entries/,
        { maxEntries: 20 },
      ));

    it(`more than the default ${DEFAULT_ARCHIVE_LIMITS.maxEntries} entries`, () =>
      rejects(
        [onnx, ...Array.from({ length: DEFAULT_ARCHIVE_LIMITS.maxEntries }, (_, i) => ({ path: `d/${i}`, data: '' }))],
        'MME_ERR_INVALID_MODEL',
        /more than 10000 entries/,
      ));

    it('entries that declare more than maxTotalBytes', () =>
      rejects(
        [onnx, { path: 'big.bin', data: new Uint8Array(4096) }],
        'MME_ERR_INVALID_MODEL',
        /expands beyond 2000 bytes/,
        { maxTotalBytes: 2000 },
      ));

    it('a decompression bomb past the ratio floor', () =>
      rejects(
        [onnx, { path: 'zeros.bin', data: new Uint8Array(3 * 2 ** 20) }],
        'MME_ERR_INVALID_MODEL',
        /expands more than 200:1/,
        { compressionRatioFloor: 2 ** 20 },
      ));

    it('a path deeper than 32 directories', () =>
      rejects([onnx, { path: `${'d/'.repeat(40)}f`, data: 'x' }], 'MME_ERR_INVALID_MODEL', /excessively deep/));
  });

  describe('broken archives are refused with 400 and leave nothing behind', () => {
    it('an empty file', () => rejects(Buffer.alloc(0), 'MME_ERR_INVALID_MODEL', /not a valid \.tar\.gz/));
    it('random bytes', () => rejects(randomBytes(4096), 'MME_ERR_INVALID_MODEL', /not a valid \.tar\.gz/));
    it('a truncated gzip', () =>
      rejects(
        tgz([{ path: 'model.onnx', data: randomBytes(64 * 1024) }]).subarray(0, 30_000),
        'MME_ERR_INVALID_MODEL',
        /not a valid \.tar\.gz/,
      ));
    it('gzip of something that is not a tar', () =>
      rejects(gzipSync(randomBytes(4096)), 'MME_ERR_INVALID_MODEL', /not a valid \.tar\.gz/));
    it('an empty tar', () => rejects(gzipSync(Buffer.alloc(1024)), 'MME_ERR_INVALID_MODEL', /not a valid \.tar\.gz/));
    it('a tar without a .onnx file', () =>
      rejects([{ path: 'README.md', data: 'hi' }], 'MME_ERR_INVALID_MODEL', /must hold a \.onnx file/));
    it('a tar with an invalid model-config.json', () =>
      rejects(
        [
          { path: 'model.onnx', data: MODEL },
          { path: 'model-config.json', data: '{"batchSize": "8"}' },
        ],
        'MME_ERR_INVALID_MODEL',
        /"batchSize" must be an integer/,
      ));
  });

  it('error messages do not reveal the extraction directory', async () => {
    const archive = writeArchive(
      'model.tar.gz',
      tgz([
        { path: 'model-config.json', data: '[]' },
        { path: 'model.onnx', data: MODEL },
      ]),
    );
    await assert.rejects(resolveArtifact(archive, { cacheDir: cacheDir() }), (err: Error) => {
      assert.ok(!err.message.includes(cacheDir()), err.message);
      assert.match(err.message, /model-config\.json in ".*model\.tar\.gz" must hold a JSON object/);
      return true;
    });
  });

  describe('an extractor that dies without answering', () => {
    // Preloaded (NODE_OPTIONS, which the fork inherits) into the extraction child only: it stops itself
    // (SIGSTOP) once its first write into the extraction is done, so the test finds it mid-file
    // however busy the machine, instead of racing it with a poll.
    const stopAfterFirstWrite = `
      if ((process.argv[1] || '').endsWith('extract-child.js')) {
        const fs = require('fs');
        let stopped = false;
        for (const name of ['write', 'writev']) {
          const original = fs[name];
          fs[name] = function (...args) {
            const done = args[args.length - 1];
            args[args.length - 1] = (...result) => {
              if (!stopped) { stopped = true; process.kill(process.pid, 'SIGSTOP'); }
              done(...result);
            };
            return original.apply(this, args);
          };
        }
      }`;
    let savedNodeOptions: string | undefined;
    before(() => {
      const preload = path.join(mkdtempSync(path.join(tmpdir(), 'mme-extract-preload-')), 'stop-after-first-write.js');
      writeFileSync(preload, stopAfterFirstWrite);
      savedNodeOptions = process.env.NODE_OPTIONS;
      process.env.NODE_OPTIONS = `${savedNodeOptions ?? ''} --require ${preload}`.trim();
    });
    after(() => {
      if (savedNodeOptions === undefined) delete process.env.NODE_OPTIONS;
      else process.env.NODE_OPTIONS = savedNodeOptions;
    });

    /** Waits for our extraction child to stop itself mid-file, then sends it `signal` (and SIGCONT, so a catchable one lands). */
    async function killExtractor(signal: NodeJS.Signals): Promise<void> {
      let stoppedPid = 0;
      await waitFor(
        () => {
          for (const pid of readdirSync('/proc').filter((e) => /^\d+$/.test(e))) {
            try {
              const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
              const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
              if (
                Number(ppid) === process.pid &&
                state === 'T' &&
                readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('extract-child.js')
              ) {
                stoppedPid = Number(pid);
                return true;
              }
            } catch {
              // the process ended while we looked
            }
          }
          return false;
        },
        'the extraction child to stop itself after its first write',
        30_000,
      );
      process.kill(stoppedPid, signal);
      process.kill(stoppedPid, 'SIGCONT');
    }

    const big = () =>
      writeArchive(
        'm.tar.gz',
        tgz([
          { path: 'model.onnx', data: MODEL },
          { path: 'noise.bin', data: randomBytes(8 * 2 ** 20) },
        ]),
      );

    it('maps SIGKILL (the OOM killer) to 507 and leaves nothing behind', async () => {
      const loading = resolveArtifact(big(), { cacheDir: cacheDir() });
      await killExtractor('SIGKILL');
      await assertMmeError(loading, 'MME_ERR_INSUFFICIENT_MEMORY', /extractor was killed/);
      assertNothingLeft();
    });

    it('maps a crash to 400 and leaves nothing behind', async () => {
      const loading = resolveArtifact(big(), { cacheDir: cacheDir() });
      await killExtractor('SIGSEGV');
      await assertMmeError(
        loading,
        'MME_ERR_INVALID_MODEL',
        /could not be extracted: the extractor was killed by SIGSEGV/,
      );
      assertNothingLeft();
    });
  });

  it('maps a full disk to 507 and removes the partial extraction', function () {
    // Needs an unprivileged user+mount namespace to put the cache on a tiny tmpfs.
    const noNamespaces = userNamespaceProblem();
    if (noNamespaces) skipBecause(this, 'user-namespaces', noNamespaces);
    const archive = writeArchive(
      'm.tar.gz',
      tgz([
        { path: 'model.onnx', data: MODEL },
        { path: 'big.bin', data: randomBytes(1024 * 1024) },
      ]),
    );
    mkdirSync(cacheDir());
    const script = `
      const fs = require('fs');
      require(${JSON.stringify(path.resolve(__dirname, '../../src/artifacts/model-artifact.js'))})
        .resolveArtifact(process.argv[1], { cacheDir: process.argv[2] })
        .then(() => console.log('{"loaded":true}'),
              (e) => console.log(JSON.stringify({ code: e.code, status: e.status, message: e.message, left: fs.readdirSync(process.argv[2]) })));`;
    const r = spawnSync(
      'unshare',
      [
        '-Urm',
        'sh',
        '-c',
        'mount -t tmpfs -o size=256k tmpfs "$2" && exec "$0" -e "$1" "$3" "$2"',
        process.execPath,
        script,
        cacheDir(),
        archive,
      ],
      { encoding: 'utf8' },
    );
    assert.equal(r.status, 0, r.stderr);
    const out = JSON.parse(r.stdout);
    assert.equal(out.code, 'MME_ERR_INSUFFICIENT_STORAGE');
    assert.equal(out.status, 507);
    assert.match(
      out.message,
      /^extracting the model archive failed: no space is left on the disk \(ENOSPC\) of the directory where the server extracts model archives/,
    );
    assert.deepEqual(out.left, []);
  });
});
