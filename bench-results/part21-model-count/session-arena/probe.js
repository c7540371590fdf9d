// Per-session memory of onnxruntime-node for a tiny MLP under different session options.
// usage: node probe.js <variant> <n>
const ort = require('../../../node_modules/onnxruntime-node');
const fs = require('fs');
const { mlpModel } = require('../../../dist/harness/onnx-models');
const variants = {
  base: {},
  noArena: { enableCpuMemArena: false },
  noPattern: { enableMemPattern: false },
  noBoth: { enableCpuMemArena: false, enableMemPattern: false },
  basicOpt: { graphOptimizationLevel: 'basic' },
  extendedOpt: { graphOptimizationLevel: 'extended' },
  noArenaExtended: { enableCpuMemArena: false, graphOptimizationLevel: 'extended' },
  noArenaBasic: { enableCpuMemArena: false, graphOptimizationLevel: 'basic' },
  noBothBasic: { enableCpuMemArena: false, enableMemPattern: false, graphOptimizationLevel: 'basic' },
  envAlloc: { extraSession: { 'session.use_env_allocators': '1' } },
};
function pss() {
  const t = fs.readFileSync('/proc/self/smaps_rollup', 'utf8');
  const m = (k) => Number(new RegExp(`^${k}:\\s+(\\d+)`, 'm').exec(t)[1]) / 1024;
  return { pss: m('Pss'), rss: m('Rss') };
}
(async () => {
  const [variant, nStr, run] = process.argv.slice(2);
  const n = Number(nStr);
  const v = variants[variant];
  const options = {
    intraOpNumThreads: 1, interOpNumThreads: 1, executionMode: 'sequential',
    graphOptimizationLevel: v.graphOptimizationLevel ?? 'all',
    ...(v.enableCpuMemArena === undefined ? {} : { enableCpuMemArena: v.enableCpuMemArena }),
    ...(v.enableMemPattern === undefined ? {} : { enableMemPattern: v.enableMemPattern }),
    extra: { session: { intra_op: { allow_spinning: '0' }, inter_op: { allow_spinning: '0' }, ...(v.extraSession ?? {}) } },
  };
  const models = Array.from({ length: n }, (_, i) => mlpModel({ sizes: [16, 32, 4], seed: i + 1 }));
  const warm = await ort.InferenceSession.create(models[0], options);
  const input = new ort.Tensor('float32', Float32Array.from({ length: 16 }, (_, i) => i), [1, 16]);
  await warm.run({ input });
  global.gc?.();
  const before = pss();
  const sessions = [];
  for (const m of models) sessions.push(await ort.InferenceSession.create(m, options));
  global.gc?.();
  const loaded = pss();
  let out;
  if (run) for (const s of sessions) out = await s.run({ input });
  global.gc?.();
  const after = pss();
  const per = (a, b) => ((a - b) * 1024 / n).toFixed(1);
  console.log(JSON.stringify({ variant, n, perSessionKiB_loaded: per(loaded.pss, before.pss), perSessionKiB_afterRun: per(after.pss, before.pss), rssPerKiB: per(after.rss, before.rss), sample: out && Array.from(out[Object.keys(out)[0]].data).slice(0, 2) }));
})();
