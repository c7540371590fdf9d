/**
 * reliability-security.md §6 D, faults (T-F1 … T-F8), injected into real processes: signals to
 * workers and to the server, handlers that crash, hang or run out of memory, a full disk, a metrics
 * endpoint that fails or never answers. T-F5 is proven by test/e2e/sagemaker-flow.test.ts (see
 * README.md here).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { tgz } from '../../harness/tar-archives';
import { allocatesThenKilled, behaviourHandler, exhaustsHeap, exitsAfterLoading } from '../../harness/fault-handlers';
import { addModel, writeModelDir } from '../../harness/onnx-models';
import { FakeCloudWatch } from '../metrics/fake-cloudwatch';
import { hammer } from '../../harness/load-generator';
import { startCliServer } from '../../harness/cli-server';
import { descendantsOf, isAlive, waitFor, workerPidsOf } from '../../harness/process-probes';
import { invoke, loadModel, request } from '../../harness/http-requests';
import { startTestServer, tempDir, type TestServer } from '../../harness/test-server';
import { skipBecause, userNamespaceProblem } from '../helpers/skip';

const kFakeAws = { AWS_ACCESS_KEY_ID: 'AKIDMMETEST', AWS_SECRET_ACCESS_KEY: 'not-a-secret', AWS_REGION: 'us-east-1' };

describe('hardening: faults', () => {
  describe('worker faults', () => {
    let t: TestServer;
    let barrier: string;
    beforeEach(() => {
      barrier = path.join(tempDir('mme-barrier-'), 'open');
    });
    afterEach(async () => {
      fs.writeFileSync(barrier, '');
      await t.close();
    });

    async function loadBehaviour(
      name: string,
      extra: Record<string, unknown> = {},
      handler = behaviourHandler,
    ): Promise<void> {
      const res = await loadModel(t, name, writeModelDir(t.store, name, addModel(), { 'handler.js': handler }), extra);
      assert.equal(res.status, 200, res.text);
    }

    /** Log lines as they are written, with the time each arrived. */
    it('T-F1 worker_sigkill_midrequest: the 8 requests a killed worker was running fail at once, not at their timeout; it restarts and serves; WorkerRestarts counts it', async () => {
      t = await startTestServer();
      await loadBehaviour('m', { batch_size: 8, max_batch_delay: 10_000, response_timeout: 60 });
      const model = t.server.manager.registry.get('m');
      const inFlight = Array.from({ length: 8 }, (_, i) => invoke(t, 'm', { barrier, echo: i }));
      await waitFor(() => model.inFlightRequests === 8, 'a batch of 8 running in the worker');
      const [pid] = workerPidsOf(process.pid);
      process.kill(pid, 'SIGKILL');
      const failed = await Promise.all(inFlight);
      // 507 from the exit, not 504 from the 60 s response timeout: they failed when the worker died.
      for (const r of failed) {
        assert.equal(r.status, 507, r.text);
        assert.equal(r.body.errorCode, 'MME_ERR_INSUFFICIENT_MEMORY');
      }
      // A full batch again, so that it runs at once rather than after max_batch_delay.
      for (const next of await Promise.all(Array.from({ length: 8 }, (_, i) => invoke(t, 'm', { echo: i })))) {
        assert.equal(next.status, 200, next.text);
        assert.notEqual(next.body.pid, pid);
      }
      assert.match((await request(`${t.url}/metrics`)).text, /^mme_worker_restarts_total 1$/m);
    });

    it('T-F2 crash_loop_backoff: a worker that dies right after each successful load is restarted with growing back-off, the model turns FAILED with the reason, and /ping stays 200', async () => {
      t = await startTestServer();
      const logs = t.logs;
      await loadBehaviour('loop', {}, exitsAfterLoading);
      const spawned = t.server.processes.spawned;
      // Counted when the model turns FAILED: the restarts go on after that, 2 s apart. The poll's short
      // timer always fires before the back-off's, however busy the machine.
      let spawnedAtFailed = -1;
      await waitFor(
        () => {
          if (t.server.manager.registry.current('loop')?.phase !== 'failed') return false;
          spawnedAtFailed = t.server.processes.spawned - spawned;
          return true;
        },
        'the model to be marked FAILED',
        20_000,
      );
      const refused = await invoke(t, 'loop', {});
      assert.equal(refused.status, 503, refused.text);
      assert.equal(refused.body.errorCode, 'MME_ERR_MODEL_FAILED');
      assert.match(refused.body.message, /exited with code 1/);
      const ping = await request(`${t.url}/ping`);
      assert.equal(ping.status, 200);
      assert.equal(ping.body.status, 'Partial Healthy');
      assert.equal((await request(`${t.url}/models/loop`)).body.status, 'FAILED');
      // The original worker and three replacements died before the third failed restart marked the model
      // FAILED. The back-off's 0, 1, 1 and then 2 s are checked on the virtual clock in
      // test/server/workers/worker-set.test.ts; here, on the wall clock, only their order.
      const failedAt3 = logs.findIndex((l) => /\[loop\] replacement worker died \(attempt 3\)/.test(l));
      assert.ok(failedAt3 >= 0, logs.join('\n'));
      const crashes = logs
        .slice(0, failedAt3)
        .filter((l) => /\[loop\] worker .* exited with code 1; restarting/.test(l));
      assert.equal(crashes.length, 4, logs.join('\n'));
      assert.equal(spawnedAtFailed, 3);
      // Restarts go on (the cause may go away).
      await waitFor(() => t.server.processes.spawned - spawned === 4, 'the next restart', 10_000);
    });

    it('T-F3 hung_worker_timeout: a stopped worker fails its request at the response timeout and is killed and replaced; queued requests are answered, none dropped', async () => {
      t = await startTestServer();
      await loadBehaviour('m', { response_timeout: 2 });
      const model = t.server.manager.registry.get('m');
      const held = invoke(t, 'm', { barrier, echo: 'held' });
      await waitFor(() => model.inFlightRequests === 1, 'the request to reach the worker');
      const [pid] = workerPidsOf(process.pid);
      process.kill(pid, 'SIGSTOP');
      const queued = Array.from({ length: 3 }, (_, i) => invoke(t, 'm', { echo: i }));
      const first = await held;
      assert.equal(first.status, 504, first.text);
      assert.equal(first.body.errorCode, 'MME_ERR_WORKER_TIMEOUT');
      await waitFor(() => !isAlive(pid), 'the stopped worker to be killed');
      for (const r of await Promise.all(queued)) {
        assert.ok(
          r.status === 200 || (r.status === 504 && r.body.errorCode === 'MME_ERR_WORKER_TIMEOUT'),
          `a queued request got ${r.status}: ${r.text}`,
        );
      }
      const after = await invoke(t, 'm', { echo: 'after' });
      assert.equal(after.status, 200);
      assert.notEqual(after.body.pid, pid);
    });

    it('T-F4 worker_oom_containment: a worker that exhausts its memory is killed, its request gets 507, the server and /ping carry on', async () => {
      // The memory limit applies to the workers only: the server (this process) started long before.
      t = await startTestServer('', { workerEnv: { ...process.env, NODE_OPTIONS: '--max-old-space-size=64' } });
      await loadBehaviour('heap', {}, exhaustsHeap);
      await loadBehaviour('native', {}, allocatesThenKilled(128));
      for (const name of ['heap', 'native']) {
        const [worker] = (await request(`${t.url}/models/${name}`)).body.workers;
        // Workers are the kernel's first choice when memory runs out; the server keeps its own score.
        assert.equal(fs.readFileSync(`/proc/${worker.pid}/oom_score_adj`, 'utf8').trim(), '900');
        const res = await invoke(t, name, {});
        assert.equal(res.status, 507, `${name}: ${res.text}`);
        assert.equal(res.body.errorCode, 'MME_ERR_INSUFFICIENT_MEMORY');
        assert.equal((await request(`${t.url}/ping`)).status, 200);
        await waitFor(
          async () =>
            (await request(`${t.url}/models/${name}`)).body.workers.some(
              (w: { pid: number; status: string }) => w.status === 'READY' && w.pid !== worker.pid,
            ),
          `${name}: a replacement worker`,
        );
      }
      assert.equal(fs.readFileSync('/proc/self/oom_score_adj', 'utf8').trim(), '0');
    });
  });

  it('T-F6 sigterm_drain: with requests in flight, SIGTERM refuses a new request, finishes those in flight, flushes metrics within its bound and exits 0 once the drain has finished, before shutdown_timeout cuts anything off', async () => {
    const fake = await FakeCloudWatch.start();
    fake.mode = 'hang';
    const emf = path.join(tempDir('mme-emf-'), 'emf.log');
    const store = tempDir('mme-store-');
    const s = await startCliServer(
      [
        'metrics_cloudwatch=true',
        'metrics_cloudwatch_region=us-east-1',
        `metrics_cloudwatch_endpoint=${fake.url}`,
        `metrics_emf=${emf}`,
      ].join('\n'),
      { store, env: kFakeAws },
    );
    try {
      assert.equal(
        (
          await loadModel(s, 'm', writeModelDir(store, 'm', addModel(), { 'handler.js': behaviourHandler }), {
            initial_workers: 4,
          })
        ).status,
        200,
      );
      const workers = descendantsOf(s.pid);
      // One request at each worker, held there until the barrier opens: each one admitted before SIGTERM.
      const dir = tempDir('mme-drain-');
      const barrier = path.join(dir, 'open');
      const reached = [0, 1, 2, 3].map((i) => path.join(dir, `reached-${i}`));
      const admitted = reached.map((touch, i) =>
        invoke(s, 'm', { touch, barrier, echo: i }).catch((err: Error) => err),
      );
      await waitFor(() => reached.every((f) => fs.existsSync(f)), 'every request to reach its worker');
      s.child.kill('SIGTERM');
      await waitFor(() => s.lines.some((l) => /SIGTERM: draining/.test(l)), 'the drain to start');
      // The listener closed as the drain began: a new connection is refused (one already open would get 503).
      // fetch may reuse the load's kept-alive connection, which the drain closes as idle: a request
      // racing that close finds the socket closed unanswered (reset or closed), not run either.
      const late = await invoke(s, 'm', { echo: 'late' }).catch((err: Error) => err);
      const refusedHow =
        late instanceof Error
          ? String((late.cause as NodeJS.ErrnoException | undefined)?.code)
          : `${late.status} ${late.body?.errorCode}`;
      assert.ok(
        [
          'ECONNREFUSED',
          'ECONNRESET',
          'EPIPE',
          'UND_ERR_SOCKET',
          'UND_ERR_CLOSED',
          '503 MME_ERR_SHUTTING_DOWN',
        ].includes(refusedHow),
        `a request sent during the drain got ${late instanceof Error ? `${late.message} (${refusedHow})` : `${late.status} ${late.text}`}`,
      );
      fs.writeFileSync(barrier, '');
      const { code, signal } = await s.exited;
      // It exited on its own, and because the drain finished rather than because shutdown_timeout
      // (inside SageMaker's 30 s) cut it off: no request was cut off.
      assert.deepEqual({ code, signal }, { code: 0, signal: null });
      await waitFor(
        () => s.lines.some((l) => /stopped: \d+ requests finished in the drain/.test(l)),
        "the drain's closing log line",
      );
      const drained = s.lines.find((l) => /stopped: \d+ requests finished in the drain/.test(l))!;
      assert.match(drained, /stopped: 4 requests finished in the drain, 0 cut off when their workers were killed/);
      (await Promise.all(admitted)).forEach((r, i) =>
        assert.ok(
          !(r instanceof Error) && r.status === 200 && r.body.echo === i,
          `request ${i}, admitted before SIGTERM: ${r instanceof Error ? r.message : `${r.status} ${r.text}`}`,
        ),
      );
      assert.ok(
        workers.every((pid) => !isAlive(pid)),
        'workers outlived the server',
      );
      // The last interval went to the sinks: EMF wrote it, CloudWatch was tried (and hung, within the bound).
      assert.match(fs.readFileSync(emf, 'utf8'), /"Invocations"/);
      assert.ok(fake.attempts >= 1, 'no attempt to send metrics to CloudWatch at shutdown');
    } finally {
      await s.stop();
      await fake.close();
    }
  });

  it('T-F7 disk_full_extraction: a full disk is 507 with the partial files removed, and a small model loads next', async function () {
    // An unprivileged user and mount namespace puts a 2 MiB tmpfs where the server extracts archives.
    const noNamespaces = userNamespaceProblem();
    if (noNamespaces) skipBecause(this, 'user-namespaces', noNamespaces);
    const store = tempDir('mme-store-');
    const tmp = tempDir('mme-tmpfs-');
    fs.writeFileSync(
      path.join(store, 'big.tar.gz'),
      tgz([
        { path: 'model.onnx', data: addModel() },
        { path: 'noise.bin', data: randomBytes(4 * 2 ** 20) },
      ]),
    );
    fs.writeFileSync(path.join(store, 'small.tar.gz'), tgz([{ path: 'model.onnx', data: addModel() }]));
    const s = await startCliServer('', {
      store,
      env: { TMPDIR: tmp },
      launcher: ['unshare', '-Urm', 'sh', '-c', 'mount -t tmpfs -o size=2m tmpfs "$TMPDIR" && exec "$@"', 'sh'],
    });
    try {
      const full = await loadModel(s, 'big', path.join(store, 'big.tar.gz'));
      assert.equal(full.status, 507, full.text);
      assert.equal(full.body.errorCode, 'MME_ERR_INSUFFICIENT_STORAGE', '507 means memory only under its own code');
      assert.match(
        full.body.message,
        /no space is left on the disk \(ENOSPC\) of the directory where the server extracts model archives \(in TMPDIR\)\. Unload a model/,
      );
      // The tmpfs is only visible inside the server's mount namespace, through its /proc root.
      const root = `/proc/${s.pid}/root${tmp}`;
      const extraction = fs.readdirSync(root).filter((d) => d.startsWith('mme-artifacts-'));
      assert.equal(extraction.length, 1);
      assert.deepEqual(fs.readdirSync(path.join(root, extraction[0])), [], 'partial files left behind');
      assert.equal((await loadModel(s, 'small', path.join(store, 'small.tar.gz'))).status, 200);
    } finally {
      await s.stop();
    }
  });

  it('T-F8 metrics_sink_failure: with CloudWatch failing, or holding a request unanswered, every invoke is answered meanwhile; drops are bounded and counted; nothing goes unhandled', async () => {
    const fake = await FakeCloudWatch.start();
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    const saved = Object.fromEntries(Object.keys(kFakeAws).map((k) => [k, process.env[k]]));
    Object.assign(process.env, kFakeAws);
    const failing = await startTestServer(
      [
        'metrics_cloudwatch=true',
        'metrics_cloudwatch_region=us-east-1',
        `metrics_cloudwatch_endpoint=${fake.url}`,
        'metric_time_interval=1',
        'metrics_cloudwatch_max_buffered=20',
      ].join('\n'),
    );
    try {
      const row = { inputs: { x: [Array(16).fill(1)] } };
      assert.equal((await loadModel(failing, 'm', writeModelDir(failing.store, 'm', addModel()))).status, 200);
      fake.mode = 'fail';
      const failed = fake.attempts;
      await waitFor(() => fake.attempts > failed, 'a CloudWatch request answered 500', 15_000);
      const r = await hammer(`${failing.url}/models/m/invoke`, JSON.stringify(row), { connections: 4, seconds: 1 });
      assert.equal(r.non2xx + r.errors, 0, JSON.stringify(r));
      assert.ok((r.statuses['200'] ?? 0) > 0, 'no invoke was answered');
      // Serving does not wait for the sink: invokes are answered while its request hangs (the sink
      // gives up after its 10 s request limit; a server that waited for it would answer none before).
      fake.mode = 'hang';
      await waitFor(() => fake.hanging > 0, 'a CloudWatch request held unanswered', 15_000);
      let answeredDuringHang = 0;
      for (let i = 0; i < 20 && fake.hanging > 0; i++) {
        const res = await invoke(failing, 'm', row);
        assert.equal(res.status, 200, res.text);
        if (fake.hanging > 0) answeredDuringHang++;
      }
      assert.ok(answeredDuringHang > 0, 'no invoke was answered while the CloudWatch request hung');
      await waitFor(
        async () =>
          /^mme_metrics_dropped_total\{sink="cloudwatch"\} [1-9]/m.test((await request(`${failing.url}/metrics`)).text),
        'dropped metrics to be counted',
        15_000,
      );
      assert.deepEqual(unhandled, []);
    } finally {
      await failing.close();
      await fake.close();
      process.off('unhandledRejection', onUnhandled);
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  });
});
