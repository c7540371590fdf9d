// µs per session.run, two session options against each other, twice each, interleaved.
// usage: node runcost.js [arena | level]   (arena: enableCpuMemArena on/off; level: graphOptimizationLevel all/basic)
const ort = require('../../../node_modules/onnxruntime-node');
const { mlpModel } = require('../../../dist/harness/onnx-models');
const pairs = {
  arena: [['arena', { enableCpuMemArena: true }], ['noArena', { enableCpuMemArena: false }]],
  level: [['all', { graphOptimizationLevel: 'all' }], ['basic', { graphOptimizationLevel: 'basic' }]],
};
(async () => {
  const pair = pairs[process.argv[2] ?? 'arena'];
  for (const sizes of [[16, 32, 4], [512, 4096, 512]]) for (const batch of [1, 16]) {
    const res = {};
    for (const [name, extra] of [...pair, ...pair]) {
      const s = await ort.InferenceSession.create(mlpModel({ sizes, seed: 1 }), { intraOpNumThreads: 1, interOpNumThreads: 1, executionMode: 'sequential', ...extra, extra: { session: { intra_op: { allow_spinning: '0' } } } });
      const input = new ort.Tensor('float32', new Float32Array(sizes[0] * batch).fill(0.5), [batch, sizes[0]]);
      const n = sizes[0] === 16 ? 20000 : 300;
      for (let i = 0; i < n / 10; i++) await s.run({ input });
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < n; i++) await s.run({ input });
      const us = Number(process.hrtime.bigint() - t0) / n / 1000;
      (res[name] ??= []).push(us.toFixed(1));
    }
    console.log(sizes.join('x'), 'batch', batch, JSON.stringify(res));
  }
})();
