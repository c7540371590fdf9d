/**
 * reliability-security.md §6 A, bad inputs and security (T-S1 … T-S9): each case against a real
 * server, asserting both the answer and that nothing happened besides it (no process, no file, no
 * connection, no change to the registry).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { writeBombs } from '../../scripts/hardening/memory-bounds';
import { pingProblems } from '../../scripts/hardening/ping-bounds';
import { tgz, type TarEntrySpec } from '../../harness/tar-archives';
import { addModel, externalDataModel, writeModelDir } from '../../harness/onnx-models';
import { startCliServer } from '../../harness/cli-server';
import { descendantsOf, listeningSockets, waitFor } from '../../harness/process-probes';
import { rawExchange, timedPing, type TimedPing } from '../../harness/raw-http';
import { invoke, type JsonResponse, loadModel, request } from '../../harness/http-requests';
import { startTestServer, tempDir, type TestServer } from '../../harness/test-server';

/** What a refused load must leave exactly as it was. */
async function holdings(t: TestServer) {
  return {
    models: (await request(`${t.url}/models`)).body,
    spawned: t.server.processes.spawned,
    store: fs.readdirSync(t.store).sort(),
    extracted: fs.readdirSync(t.server.cacheDir),
  };
}

/** A request whose path no client library would normalise or refuse. */
function rawRequest(
  url: string,
  method: string,
  rawPath: string,
): Promise<{ status: number; headers: http.IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    http
      .request(`${url}/`, { method, path: rawPath }, (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers }));
      })
      .on('error', reject)
      .end();
  });
}

function assertRefused(res: JsonResponse, status: number, code: string, message: RegExp, what: string): void {
  assert.equal(res.status, status, `${what}: ${res.text}`);
  assert.equal(res.body.errorCode, code, what);
  assert.match(res.body.message, message, what);
}

describe('hardening: bad inputs and security', () => {
  let t: TestServer;
  let valid: string;
  beforeEach(async () => {
    t = await startTestServer();
    valid = writeModelDir(t.store, 'valid', addModel());
  });
  afterEach(async () => {
    await t.close();
  });

  it('T-S1 load_rejects_path_escape: urls that resolve outside the model roots are 400 before anything is read or started', async () => {
    const outside = tempDir('mme-outside-');
    writeModelDir(outside, 'm', addModel());
    fs.symlinkSync(path.join(outside, 'm'), path.join(t.store, 'link-out'));
    // The prefix trap: "<store>-evil" starts with "<store>" but is not inside it.
    const sibling = writeModelDir(`${t.store}-evil`, 'm', addModel());
    const before = await holdings(t);
    const cases: Array<[string, number, string, RegExp]> = [
      ['/opt/ml/models/../../etc', 400, 'MME_ERR_BAD_REQUEST', /outside the model roots/],
      ['/etc', 400, 'MME_ERR_BAD_REQUEST', /outside the model roots/],
      ['/proc/self', 400, 'MME_ERR_BAD_REQUEST', /only local directories/],
      [`${t.store}/../${path.basename(outside)}/m`, 400, 'MME_ERR_BAD_REQUEST', /outside the model roots/],
      ['../../etc', 400, 'MME_ERR_BAD_REQUEST', /outside the model roots/],
      [path.join(t.store, 'link-out'), 400, 'MME_ERR_BAD_REQUEST', /outside the model roots/],
      [sibling, 400, 'MME_ERR_BAD_REQUEST', /outside the model roots/],
      ['', 400, 'MME_ERR_BAD_REQUEST', /url is required/],
      // Percent signs are only characters in a path: this names a directory inside the root that does not exist.
      ['%2e%2e/x', 404, 'MME_ERR_MODEL_NOT_FOUND', /Model not found in model store/],
    ];
    for (const [url, status, code, message] of cases)
      assertRefused(await loadModel(t, 'm', url), status, code, message, JSON.stringify(url));
    // The MMS query-string form decodes once: %2e%2e%2f is "../".
    const query = await request(`${t.managementUrl}/models?model_name=m&url=%2e%2e%2f${path.basename(outside)}%2fm`, {
      method: 'POST',
    });
    assertRefused(query, 400, 'MME_ERR_BAD_REQUEST', /outside the model roots/, 'query string');
    assert.deepEqual(await holdings(t), before);
  });

  it('T-S2 load_rejects_remote_urls: nothing is fetched, whatever the scheme', async () => {
    let connections = 0;
    const target = net.createServer((s) => {
      connections++;
      s.destroy();
    });
    await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
    const { port } = target.address() as net.AddressInfo;
    try {
      const before = await holdings(t);
      for (const url of [
        `http://127.0.0.1:${port}/latest/meta-data/`,
        `https://127.0.0.1:${port}/model.tar.gz`,
        `HTTP://127.0.0.1:${port}/`,
        `ftp://127.0.0.1:${port}/m`,
        `s3://bucket-${port}/model.tar.gz`,
        'file:///etc/passwd',
        `file://127.0.0.1:${port}/m`,
        'http://169.254.169.254/latest/meta-data/',
        `https:127.0.0.1:${port}`,
      ]) {
        assertRefused(
          await loadModel(t, 'm', url),
          400,
          'MME_ERR_BAD_REQUEST',
          /only local directories or \.tar\.gz files/,
          url,
        );
      }
      // Protocol-relative: a local path to the server, and outside its roots.
      assertRefused(
        await loadModel(t, 'm', `//127.0.0.1:${port}/m`),
        400,
        'MME_ERR_BAD_REQUEST',
        /outside the model roots/,
        '//host',
      );
      assert.deepEqual(await holdings(t), before);
      assert.equal(connections, 0, 'the server connected to the url');
    } finally {
      target.close();
    }
  });

  it('T-S3 model_name_validation: hostile names are 400 on load and 404/400 elsewhere, and never become files', async () => {
    const names = [
      '../x',
      'a/b',
      'a%2Fb',
      'x'.repeat(300),
      'x\r\nSet-Cookie: a=1',
      'a\0b',
      '..',
      '.hidden',
      '-flag',
      'a b',
    ];
    const before = await holdings(t);
    for (const name of names) {
      assertRefused(
        await loadModel(t, name, valid),
        400,
        'MME_ERR_BAD_REQUEST',
        /model_name .* is not valid/,
        JSON.stringify(name),
      );
    }
    assert.deepEqual(await holdings(t), before);
    const inPath = [
      '..%2Fx',
      'a%2Fb',
      'a%252Fb',
      'x'.repeat(300),
      'x%0D%0ASet-Cookie:%20a=1',
      'a%00b',
      '%2e%2e',
      'valid%2F..%2F..%2Fetc',
    ];
    for (const seg of inPath) {
      for (const [method, p] of [
        ['GET', `/models/${seg}`],
        ['DELETE', `/models/${seg}`],
        ['PUT', `/models/${seg}?min_worker=1`],
        ['POST', `/models/${seg}/invoke`],
        ['POST', `/predictions/${seg}`],
      ]) {
        const res = await rawRequest(t.url, method, p);
        assert.ok(res.status === 404 || res.status === 400, `${method} ${p}: ${res.status}`);
        assert.equal(res.headers['set-cookie'], undefined, `${method} ${p} set a cookie`);
      }
    }
    assert.deepEqual(await holdings(t), before);
    assert.deepEqual(
      fs.readdirSync(path.dirname(t.store)).filter((n) => /^(x|a|b|etc|Set-Cookie.*)$/.test(n)),
      [],
      'a name became a directory next to the store',
    );
  });

  describe('T-S4 tar_slip_suite', () => {
    let outside: string;
    let canary: string;
    let canaryBytes: Buffer;
    beforeEach(() => {
      outside = tempDir('mme-canaries-');
      canary = path.join(outside, 'canary.txt');
      canaryBytes = randomBytes(64);
      fs.writeFileSync(canary, canaryBytes);
      fs.mkdirSync(path.join(outside, 'dir'));
    });

    function assertCanariesIntact(what: string): void {
      assert.deepEqual(fs.readFileSync(canary), canaryBytes, `${what}: the canary changed`);
      assert.deepEqual(fs.readdirSync(outside).sort(), ['canary.txt', 'dir'], `${what}: a file appeared outside`);
      assert.deepEqual(
        fs.readdirSync(path.join(outside, 'dir')),
        [],
        `${what}: a file appeared in the canary directory`,
      );
    }

    const onnx: TarEntrySpec = { path: 'model.onnx', data: addModel() };
    const attacks = (): Array<[string, TarEntrySpec[], RegExp]> => [
      ['../evil', [onnx, { path: '../evil', data: 'x' }], /absolute path or leads outside/],
      ['an absolute path', [onnx, { path: path.join(outside, 'evil'), data: 'x' }], /absolute path or leads outside/],
      ['a/../../evil', [onnx, { path: 'a/../../evil', data: 'x' }], /absolute path or leads outside/],
      [
        'a symlink to a directory outside, then a file through it',
        [
          onnx,
          { path: 'l', type: 'SymbolicLink', linkpath: path.join(outside, 'dir') },
          { path: 'l/passwd', data: 'x' },
        ],
        /"l" is a SymbolicLink/,
      ],
      ['a hard link to the canary', [onnx, { path: 'h', type: 'Link', linkpath: canary }], /"h" is a Link/],
      [
        'the CVE-2026-26960 symlink chain plus hard link',
        [
          onnx,
          { path: 'a/b/c/up', type: 'SymbolicLink', linkpath: '../..' },
          { path: 'a/b/escape', type: 'SymbolicLink', linkpath: 'c/up/../..' },
          { path: 'exfil', type: 'Link', linkpath: `a/b/escape/${path.relative('/', canary)}` },
        ],
        /is a SymbolicLink/,
      ],
      ['a FIFO', [onnx, { path: 'pipe', type: 'FIFO' }], /"pipe" is a FIFO/],
      ['a character device', [onnx, { path: 'null', type: 'CharacterDevice' }], /"null" is a CharacterDevice/],
      [
        'a path 100 directories deep',
        [onnx, { path: 'deep', paxPath: `${'d/'.repeat(100)}f`, data: 'x' }],
        /excessively deep/,
      ],
    ];

    it('T-S4 tar_slip_suite: every escape is 400 naming the entry; canaries unchanged, nothing extracted, no worker', async () => {
      for (const [what, entries, message] of attacks()) {
        const archive = path.join(t.store, 'attack.tar.gz');
        fs.writeFileSync(archive, tgz(entries));
        const before = await holdings(t);
        assertRefused(await loadModel(t, 'attack', archive), 400, 'MME_ERR_INVALID_MODEL', message, what);
        assert.deepEqual(await holdings(t), before, what);
        assertCanariesIntact(what);
        assert.equal((await request(`${t.url}/ping`)).status, 200, `${what}: /ping after the attack`);
      }
    });

    it('T-S4 tar_slip_suite: PAX names with a NUL or only digits (CVE-2026-59875, CVE-2026-59871) land inside, harmlessly', async () => {
      for (const [what, paxPath, landed] of [
        ['a NUL in a PAX path', 'a\0b', 'a'],
        ['an all-digit PAX path', '12345', '12345'],
      ] as const) {
        const archive = path.join(t.store, 'pax.tar.gz');
        fs.writeFileSync(archive, tgz([onnx, { path: 'placeholder', paxPath, data: 'x' }]));
        const res = await loadModel(t, 'pax', archive);
        assert.equal(res.status, 200, `${what}: ${res.text}`);
        const [dir] = fs.readdirSync(t.server.cacheDir);
        assert.deepEqual(fs.readdirSync(path.join(t.server.cacheDir, dir)).sort(), [landed, 'model.onnx'].sort(), what);
        assert.equal((await request(`${t.url}/models/pax`, { method: 'DELETE' })).status, 200);
        assert.deepEqual(fs.readdirSync(t.server.cacheDir), [], `${what}: extraction left behind`);
        assertCanariesIntact(what);
      }
    });
  });

  it('T-S6 malformed_archive_and_model: each is 400 with a clear message that shows no server path, and the name loads right after', async () => {
    const outside = tempDir('mme-outside-');
    fs.writeFileSync(path.join(outside, 'w.bin'), Buffer.alloc(16));
    const archive = (entries: TarEntrySpec[]) => tgz(entries);
    const cases: Array<[string, () => string, RegExp]> = [
      [
        'a truncated gzip',
        () => file('m.tar.gz', archive([{ path: 'model.onnx', data: randomBytes(64 * 1024) }]).subarray(0, 20_000)),
        /not a valid \.tar\.gz/,
      ],
      ['random bytes', () => file('m.tar.gz', randomBytes(4096)), /not a valid \.tar\.gz/],
      ['an empty file', () => file('m.tar.gz', Buffer.alloc(0)), /not a valid \.tar\.gz/],
      [
        'a tar without a .onnx file',
        () => file('m.tar.gz', archive([{ path: 'README.md', data: 'hi' }])),
        /must hold a \.onnx file/,
      ],
      [
        'a corrupt .onnx in a directory',
        () => writeModelDir(tempIn(), 'm', randomBytes(512)),
        /onnxruntime could not read model\.onnx \(Protobuf parsing failed/,
      ],
      [
        'a corrupt .onnx in an archive',
        () => file('m.tar.gz', archive([{ path: 'model.onnx', data: randomBytes(512) }])),
        /onnxruntime could not read model\.onnx \(Protobuf parsing failed/,
      ],
      [
        'external data at ../../etc/passwd',
        () => writeModelDir(tempIn(), 'm', externalDataModel('../../etc/passwd')),
        /External data path escapes model directory/,
      ],
      [
        'external data at an absolute path',
        () => writeModelDir(tempIn(), 'm', externalDataModel('/etc/passwd')),
        /Absolute path not allowed for external data/,
      ],
      [
        'external data through a link out of the directory',
        () => {
          const dir = writeModelDir(tempIn(), 'm', externalDataModel('w.bin'));
          fs.symlinkSync(path.join(outside, 'w.bin'), path.join(dir, 'w.bin'));
          return dir;
        },
        /External data path escapes model directory/,
      ],
      [
        'external data escaping an archive',
        () => file('m.tar.gz', archive([{ path: 'model.onnx', data: externalDataModel('../w.bin') }])),
        /External data path escapes model directory/,
      ],
      [
        'a model.onnx linked to a file outside',
        () => {
          const dir = path.join(tempIn(), 'm');
          fs.mkdirSync(dir);
          fs.writeFileSync(path.join(outside, 'model.onnx'), addModel());
          fs.symlinkSync(path.join(outside, 'model.onnx'), path.join(dir, 'model.onnx'));
          return dir;
        },
        /model\.onnx in .* is a symbolic link/,
      ],
    ];
    let n = 0;
    function tempIn(): string {
      return fs.mkdtempSync(path.join(t.store, 'case-'));
    }
    function file(name: string, bytes: Uint8Array): string {
      const p = path.join(tempIn(), name);
      fs.writeFileSync(p, bytes);
      return p;
    }
    const serverPaths = [
      t.server.cacheDir,
      path.resolve(__dirname, '..', '..'),
      `${os.tmpdir()}/mme-artifacts-`,
      outside,
    ];
    for (const [what, make, message] of cases) {
      const name = `m${++n}`;
      const res = await loadModel(t, name, make());
      assertRefused(res, 400, 'MME_ERR_INVALID_MODEL', message, what);
      for (const p of serverPaths)
        assert.ok(!res.body.message.includes(p), `${what}: the message shows ${p}: ${res.body.message}`);
      assert.doesNotMatch(res.body.message, /\n\s+at |Require stack/, `${what}: a stack in the message`);
      assert.doesNotMatch(
        res.body.message,
        /resolved path|allowed directory/,
        `${what}: onnxruntime's resolved paths in the message`,
      );
      assert.equal((await loadModel(t, name, valid)).status, 200, `${what}: the name did not load afterwards`);
      assert.equal((await request(`${t.url}/models/${name}`, { method: 'DELETE' })).status, 200);
    }
    assert.deepEqual(fs.readdirSync(t.server.cacheDir), [], 'extraction left behind');
  });
});

/** Bytes under `dir`, recursively (what the extraction root holds on disk). */
function diskUse(dir: string): number {
  let total = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    try {
      if (e.isFile()) total += fs.lstatSync(path.join(e.parentPath, e.name)).size;
    } catch {
      // removed while we looked
    }
  }
  return total;
}

describe('hardening: bombs, listeners, error hygiene and configuration', () => {
  it('T-S5 decompression_bomb: refused with little disk, /ping answering throughout (the server memory they cost: npm run soak)', async () => {
    const tmp = tempDir('mme-bomb-tmp-');
    const store = tempDir('mme-store-');
    const s = await startCliServer('', { store, env: { TMPDIR: tmp } });
    try {
      const bombs = await writeBombs(store);
      const port = Number(new URL(s.url).port);
      for (const [what, file, message] of bombs) {
        const pings: TimedPing[] = [];
        let peakDisk = 0;
        let loading = true;
        const pinging = (async () => {
          while (loading) {
            pings.push(await timedPing(port));
            peakDisk = Math.max(peakDisk, diskUse(tmp));
            await new Promise((r) => setTimeout(r, 20));
          }
        })();
        const res = await loadModel(s, 'bomb', file);
        loading = false;
        await pinging;
        assertRefused(res, 400, 'MME_ERR_INVALID_MODEL', message, what);
        assert.deepEqual(pingProblems(pings, 1), [], what);
        // The ratio check stops inflation at its 10 MiB floor: far below maxTotalBytes (4 GiB).
        assert.ok(peakDisk < 32 * 2 ** 20, `${what}: ${peakDisk} bytes on disk during extraction`);
        assert.equal(diskUse(tmp), 0, `${what}: extraction left behind`);
      }
    } finally {
      await s.stop();
    }
  });

  it('T-S7 listening_surface: the server listens on the configured addresses only, and workers on nothing', async () => {
    for (const properties of [
      // SageMaker's layout: both APIs on one port, /metrics on a loopback port of its own.
      'metrics_address=http://127.0.0.2:0\nspare_workers=1',
      // MMS's layout: the management API on its own loopback address.
      'inference_address=http://127.0.0.1:0\nmanagement_address=http://127.0.0.2:0\nspare_workers=1',
    ]) {
      const store = tempDir('mme-store-');
      const s = await startCliServer(properties, { store });
      try {
        await waitFor(() => s.lines.filter((l) => / listening on /.test(l)).length === 2, 'both listeners');
        const configured = s.lines
          .flatMap((l) => /listening on http:\/\/(\S+)/.exec(l)?.[1] ?? [])
          .map((a) => `tcp ${a}`)
          .sort();
        const managementUrl = s.lines.flatMap((l) => /management API listening on (\S+)/.exec(l)?.[1] ?? [])[0];
        assert.equal(
          (await loadModel({ managementUrl }, 'm', writeModelDir(store, 'm', addModel()), { initial_workers: 2 }))
            .status,
          200,
        );
        // Two workers, and the spare that replaces the one the load took (it starts once the load is over).
        await waitFor(() => descendantsOf(s.pid).length === 3, 'two workers and a spare');
        const workers = descendantsOf(s.pid);
        assert.deepEqual(listeningSockets(s.pid), configured);
        for (const pid of workers) assert.deepEqual(listeningSockets(pid), [], `worker ${pid} listens`);
        for (const address of configured) {
          const base = `http://${address.slice(4)}`;
          assert.equal((await request(`${base}/no-such-route`)).status, 404, `${base}: unknown path`);
        }
        assert.equal((await request(`${s.url}/ping`, { method: 'DELETE' })).status, 405, 'wrong method');
        assert.equal(
          (await request(`${managementUrl}/models`, { method: 'DELETE' })).status,
          405,
          'wrong method on management',
        );
      } finally {
        await s.stop();
      }
    }
  });

  it('T-S9 config_properties_strict: bad values stop start-up naming the key; escapes and continuations parse as java.util.Properties; no env override unless enabled', async () => {
    for (const [line, key] of [
      ['job_queue_size=ten', 'job_queue_size'],
      ['model_load_timeout=-5', 'model_load_timeout'],
      ['unregister_model_timeout=-1', 'unregister_model_timeout'],
      ['max_request_size=\\u0031k', 'max_request_size'],
    ]) {
      await assert.rejects(startCliServer(line), (err: Error) => {
        assert.match(err.message, /server exited with 1/, line);
        assert.match(err.message, new RegExp(`config key ${key}`), line);
        return true;
      });
    }
    const store = tempDir('mme-store-');
    writeModelDir(store, 'm', addModel());
    const properties = [
      // With allow_unknown_keys=true an unknown key is reported at start-up, not fatal: MMS files carry keys of other servers (vmargs, netty_*).
      'allow_unknown_keys=true',
      'job_queue_sise=5',
      'job_queue_size=1\\',
      '    2',
      'default_workers_per_model=\\u0031',
      `load_models=\\`,
      '  m',
    ].join('\n');
    for (const [switchLine, queue] of [
      ['', 12],
      ['enable_envvars_config=true', 7],
    ] as const) {
      const s = await startCliServer(`${properties}\n${switchLine}`, { store, env: { MMS_JOB_QUEUE_SIZE: '7' } });
      try {
        assert.ok(
          s.lines.some((l) => /unknown keys ignored: job_queue_sise/.test(l)),
          s.lines.join('\n'),
        );
        await waitFor(async () => (await request(`${s.url}/models/m`)).status === 200, 'the start-up model');
        const described = (await request(`${s.url}/models/m`)).body;
        assert.equal(described.jobQueueSize, queue);
        assert.equal(described.workers.length, 1);
      } finally {
        await s.stop();
      }
    }
  });
});

/** Handler commands that make a request fail in ways the server must classify and clean up. */
const kFaultyHandler = `
exports.handle = async (requests, ctx) => {
  const cmd = JSON.parse(requests[0].body.toString() || '{}');
  if (cmd.throwString) throw 'boom: a string, not an Error';
  if (cmd.throwObject) throw { status: 429, message: 'slow down' };
  if (cmd.badHeader) ctx.setResponseHeader(0, 'x-injected', 'a\\r\\nSet-Cookie: b=1');
  return requests.map(() => '{}');
};
`;

describe('hardening: error hygiene', () => {
  let t: TestServer;
  let emf: string;
  const serverPaths = () => [
    path.resolve(__dirname, '..', '..', '..'),
    t.server.cacheDir,
    `${os.tmpdir()}/mme-artifacts-`,
  ];
  beforeEach(async () => {
    emf = path.join(tempDir('mme-emf-'), 'emf.log');
    t = await startTestServer(`metrics_per_model_dimension=true\nmetrics_emf=${emf}`);
  });
  afterEach(async () => {
    await t.close();
  });

  /** An MMS error body of the right class, with nothing of the server's internals in it. */
  function assertHygienic(res: JsonResponse, status: number, code: string, what: string): void {
    assert.equal(res.status, status, `${what}: ${res.text}`);
    assert.deepEqual(Object.keys(res.body).sort(), ['code', 'errorCode', 'message', 'type'], what);
    assert.equal(res.body.code, status, what);
    assert.equal(res.body.errorCode, code, what);
    assert.doesNotMatch(
      res.text,
      /\n\s+at |Require stack|node:internal|\bpid\b|socket|fd 3/i,
      `${what}: internals in ${res.text}`,
    );
    for (const p of serverPaths()) assert.ok(!res.text.includes(p), `${what}: the body shows ${p}`);
  }

  it('T-S8 error_hygiene_and_log_injection: errors are MMS bodies without internals, 4xx for the client and 5xx for faults; hostile names and headers never reach logs or metric dimensions', async () => {
    const add = writeModelDir(t.store, 'add', addModel());
    assert.equal((await loadModel(t, 'add', add)).status, 200);
    assert.equal(
      (await loadModel(t, 'faulty', writeModelDir(t.store, 'faulty', addModel(), { 'handler.js': kFaultyHandler })))
        .status,
      200,
    );
    const row = { inputs: { x: [Array(16).fill(1)] } };

    assertHygienic(
      await request(`${t.url}/models/add/invoke`, {
        method: 'POST',
        body: '{"inputs":',
        headers: { 'content-type': 'application/json' },
      }),
      400,
      'MME_ERR_INVALID_INPUT',
      'invalid JSON',
    );
    assertHygienic(
      await invoke(t, 'add', { inputs: { x: [[1, 2, 3]] } }),
      400,
      'MME_ERR_INVALID_INPUT',
      'a wrong input shape',
    );
    assertHygienic(
      await invoke(t, 'faulty', { badHeader: true }),
      500,
      'MME_ERR_MODEL_ERROR',
      'a handler setting a header value with CR LF',
    );
    assertHygienic(
      await invoke(t, 'faulty', { throwString: true }),
      500,
      'MME_ERR_MODEL_ERROR',
      'a handler throwing a string',
    );
    assertHygienic(
      await invoke(t, 'faulty', { throwObject: true }),
      429,
      'MME_ERR_INVALID_INPUT',
      'a handler throwing an object with a status',
    );
    assertHygienic(
      await loadModel(
        t,
        'broken',
        writeModelDir(t.store, 'broken', addModel(), { 'handler.js': "require('./missing-module');" }),
      ),
      400,
      'MME_ERR_INVALID_MODEL',
      'a handler that fails to import',
    );

    // Control characters cannot travel in a header value (Node's parser refuses them), but tabs,
    // Latin-1 and sheer length can; decoded path segments carry anything.
    const longHeader = `tenant\t${'\u00e9A'.repeat(5000)}`;
    for (const [route, expected] of [
      ['/models/add/invoke', 200],
      ['/invocations', 404],
    ] as const) {
      const body = JSON.stringify(row);
      const head = `POST ${route} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nX-Amzn-SageMaker-Target-Model: ${longHeader}\r\nConnection: close\r\n\r\n`;
      const r = await rawExchange(
        t.server.listeners[0].port,
        Buffer.concat([Buffer.from(head, 'latin1'), Buffer.from(body)]),
        { responses: 1 },
      );
      assert.equal(r.responses[0]?.status, expected, `${route} with a 10 KB Target-Model header`);
    }
    const hostile = encodeURIComponent(`\u001b[31mx\r\nforged log line ${'B'.repeat(400)}`);
    assert.equal((await invoke(t, hostile, row)).status, 404);
    assert.equal(
      (await request(`${t.url}/invocations?model_name=${hostile}`, { method: 'POST', json: row })).status,
      404,
    );
    assert.equal(
      (
        await request(`${t.url}/invocations`, {
          method: 'POST',
          json: row,
          headers: { 'X-Amzn-SageMaker-Target-Model': `${'C'.repeat(300)}.tar.gz` },
        })
      ).status,
      404,
    );

    await t.server.metrics.flush();
    const prometheus = (await request(`${t.url}/metrics`)).text;
    const labels = [...prometheus.matchAll(/model="((?:[^"\\]|\\.)*)"/g)].map((m) => m[1]);
    // The EMF sink writes the interval to its file asynchronously: wait for complete lines.
    await waitFor(() => fs.existsSync(emf) && fs.readFileSync(emf, 'utf8').endsWith('\n'), 'the EMF interval on disk');
    const dimensions = fs
      .readFileSync(emf, 'utf8')
      .trim()
      .split('\n')
      .flatMap((l) => (JSON.parse(l) as { ModelName?: string }).ModelName ?? []);
    for (const [where, values] of [
      ['Prometheus label', labels],
      ['EMF ModelName', dimensions],
    ] as const) {
      assert.ok(values.length > 0, `no ${where} at all`);
      // Loaded models and the failed load of "broken": names the management API checked, nothing a client made up.
      assert.deepEqual([...new Set(values)].sort(), ['add', 'broken', 'faulty'], `${where} values`);
    }
    for (const line of t.logs) {
      // eslint-disable-next-line no-control-regex
      assert.doesNotMatch(
        line.split('\n')[0],
        /[\u0000-\u0008\u000b-\u001f\u007f]/,
        `a control character in the log: ${JSON.stringify(line.slice(0, 200))}`,
      );
      assert.ok(
        !line.includes('éAéAéA') && !line.includes('BBBB') && !line.includes('CCCC'),
        `client text in the log: ${line.slice(0, 200)}`,
      );
    }
  });
});
