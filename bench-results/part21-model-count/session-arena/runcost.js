const ort = require('../../../node_modules/onnxruntime-node');
const { mlpModel } = require('../../../dist/harness/onnx-models');
(async () => {
  for (const sizes of [[16, 32, 4], [512, 4096, 512]]) for (const batch of [1, 16]) {
    const res = {};
    for (const arena of [true, false, true, false]) {
      const s = await ort.InferenceSession.create(mlpModel({ sizes, seed: 1 }), { intraOpNumThreads: 1, interOpNumThreads: 1, executionMode: 'sequential', enableCpuMemArena: arena, extra: { session: { intra_op: { allow_spinning: '0' } } } });
      const input = new ort.Tensor('float32', new Float32Array(sizes[0] * batch).fill(0.5), [batch, sizes[0]]);
      const n = sizes[0] === 16 ? 20000 : 300;
      for (let i = 0; i < n / 10; i++) await s.run({ input });
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < n; i++) await s.run({ input });
      const us = Number(process.hrtime.bigint() - t0) / n / 1000;
      (res[arena ? 'arena' : 'noArena'] ??= []).push(us.toFixed(1));
    }
    console.log(sizes.join('x'), 'batch', batch, JSON.stringify(res));
  }
})();
