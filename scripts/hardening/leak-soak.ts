/**
 * T-L5 load_unload_soak_leak: load → 10 invokes → unload, over and over on one model, then once
 * each on distinct models, against a CLI server; the footprint after every cycle goes to the leak
 * verdict. The negative control runs the same check on a server that never frees anything (one
 * kept worker opening and keeping a session per cycle) and must fail it.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { tgz } from '../../harness/tar-archives';
import { keepsSessions } from '../../harness/fault-handlers';
import { mlpModel, writeModelDir } from '../../harness/onnx-models';
import { startCliServer, type CliServer } from '../../harness/cli-server';
import { footprint, leakVerdict, type Footprint, type LeakVerdict } from '../../harness/footprint';
import { invoke, loadModel, request } from '../../harness/http-requests';
import { tempDir } from '../../harness/test-server';

export interface LeakSoakOptions {
  /** Cycles on one model. */
  cycles: number;
  /** Then one cycle on each of this many distinct models. */
  distinctModels: number;
  invokesPerCycle?: number;
  /** The negative control: the same number of cycles on a server that keeps what each one allocates. */
  leaky?: boolean;
  /** Most RSS growth from the middle of the run to its end (default 50 MiB); null: not judged (npm test). */
  rssGrowthLimit?: number | null;
  progress?: (line: string) => void;
}

export interface LeakSoakResult extends LeakVerdict {
  samples: Footprint[];
}

const kSpec = { sizes: [16, 64, 4], seed: 5 };
/** 8 MiB of weights: what one kept session holds, so that a leak shows within a short run. */
const kLeakySpec = { sizes: [256, 4096, 256], seed: 6 };
const kRssGrowthLimit = 50 * 2 ** 20;
const kSpares = 0;

async function ok(res: Promise<{ status: number; text: string }>, what: string): Promise<void> {
  const r = await res;
  assert.equal(r.status, 200, `${what}: ${r.text}`);
}

async function cycle(s: CliServer, name: string, url: string, invokes: number): Promise<void> {
  await ok(loadModel(s, name, url), `load ${name}`);
  const row = [Array(kSpec.sizes[0]).fill(1)];
  for (let i = 0; i < invokes; i++) await ok(invoke(s, name, row), `invoke ${name}`);
  await ok(request(`${s.url}/models/${name}`, { method: 'DELETE' }), `unload ${name}`);
}

export async function runLeakSoak(opts: LeakSoakOptions): Promise<LeakSoakResult> {
  const invokes = opts.invokesPerCycle ?? 10;
  const store = tempDir('mme-soak-store-');
  // The server's extraction root lands here, so stray extraction directories can be counted.
  const tmp = tempDir('mme-soak-tmp-');
  const s = await startCliServer(`spare_workers=${kSpares}`, { store, env: { TMPDIR: tmp } });
  const samples: Footprint[] = [];
  try {
    const sample = (i: number, total: number) => {
      samples.push(footprint(s));
      if (i % 50 === 0 || i === total)
        opts.progress?.(
          `cycle ${i}/${total}: ${(samples.at(-1)!.rssBytes / 2 ** 20).toFixed(0)} MiB, ${samples.at(-1)!.fds} fds`,
        );
    };
    if (opts.leaky) {
      await ok(
        loadModel(s, 'leaky', writeModelDir(store, 'leaky', mlpModel(kLeakySpec), { 'handler.js': keepsSessions })),
        'load the leaking control',
      );
      for (let i = 1; i <= opts.cycles; i++) {
        for (let j = 0; j < invokes; j++) await ok(invoke(s, 'leaky', { open: j === 0 }), 'invoke the leaking control');
        sample(i, opts.cycles);
      }
    } else {
      const archive = path.join(store, 'soak.tar.gz');
      fs.writeFileSync(archive, tgz([{ path: 'model.onnx', data: mlpModel(kSpec) }]));
      const total = opts.cycles + opts.distinctModels;
      for (let i = 1; i <= opts.cycles; i++) {
        await cycle(s, 'soak', archive, invokes);
        sample(i, total);
      }
      for (let i = 1; i <= opts.distinctModels; i++) {
        await cycle(
          s,
          `distinct-${i}`,
          writeModelDir(store, `distinct-${i}`, mlpModel({ ...kSpec, seed: i })),
          invokes,
        );
        sample(opts.cycles + i, total);
      }
    }
    const verdict = leakVerdict(samples, {
      rssGrowthBytes: opts.rssGrowthLimit === undefined ? kRssGrowthLimit : opts.rssGrowthLimit,
      fdSlack: 5,
      processes: kSpares + (opts.leaky ? 1 : 0),
    });
    const stray = fs
      .readdirSync(tmp)
      .filter((d) => d.startsWith('mme-artifacts-'))
      .flatMap((d) => fs.readdirSync(path.join(tmp, d)));
    if (stray.length > 0) verdict.problems.push(`extraction directories left behind: ${stray.join(', ')}`);
    return { ...verdict, ok: verdict.problems.length === 0, samples };
  } finally {
    await s.stop();
  }
}
