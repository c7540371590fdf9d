// Graph optimization level `basic` against `all`, per model: what a session keeps (PSS growth per
// session, shared-host session options: arena off) and µs per run (interleaved, dedicated options).
// usage: node level-probe.js mem <model> <level> <n>     one JSON line: KiB per session, loaded and after a run
//        node level-probe.js run <model> [rounds]        one JSON line: µs per run at batch 1 and 16, all/basic interleaved
//        node level-probe.js sizes                       file bytes and node count of every model
const ort = require('../../node_modules/onnxruntime-node');
const fs = require('fs');
const { onnx } = require('../../node_modules/onnx-proto');
const h = require('../../dist/harness/onnx-models');

const A = onnx.AttributeProto.AttributeType;
/** A transformer-like stack with small weights and many nodes: Linear, LayerNorm and GELU as primitive ops. */
function blockModel(layers, dim, seq) {
  let seed = 7;
  const rand = () => ((seed = (seed * 16807) % 2147483647) / 2147483647) * 2 - 1;
  const floats = (name, dims) => h.floatInitializer(name, dims, Float32Array.from({ length: dims.reduce((a, b) => a * b, 1) }, rand));
  const scalar = (name, v) => h.floatInitializer(name, [], Float32Array.of(v));
  const inits = [scalar('two', 2), scalar('eps', 1e-5), scalar('sqrt2', Math.SQRT2), scalar('one', 1), scalar('half', 0.5)];
  const nodes = [];
  const mean = (i, o) => ({ opType: 'ReduceMean', input: [i], output: [o], attribute: [{ name: 'axes', type: A.INTS, ints: [-1] }, { name: 'keepdims', type: A.INT, i: 1 }] });
  let x = 'input';
  for (let l = 0; l < layers; l++) {
    const p = (s) => `l${l}_${s}`;
    inits.push(floats(p('W'), [dim, dim]), floats(p('b'), [dim]), floats(p('g'), [dim]), floats(p('beta'), [dim]));
    nodes.push(
      { opType: 'MatMul', input: [x, p('W')], output: [p('mm')] },
      { opType: 'Add', input: [p('mm'), p('b')], output: [p('lin')] },
      mean(p('lin'), p('mu')),
      { opType: 'Sub', input: [p('lin'), p('mu')], output: [p('d')] },
      { opType: 'Pow', input: [p('d'), 'two'], output: [p('d2')] },
      mean(p('d2'), p('var')),
      { opType: 'Add', input: [p('var'), 'eps'], output: [p('ve')] },
      { opType: 'Sqrt', input: [p('ve')], output: [p('sd')] },
      { opType: 'Div', input: [p('d'), p('sd')], output: [p('n')] },
      { opType: 'Mul', input: [p('n'), p('g')], output: [p('ng')] },
      { opType: 'Add', input: [p('ng'), p('beta')], output: [p('ln')] },
      { opType: 'Div', input: [p('ln'), 'sqrt2'], output: [p('gd')] },
      { opType: 'Erf', input: [p('gd')], output: [p('ge')] },
      { opType: 'Add', input: [p('ge'), 'one'], output: [p('g1')] },
      { opType: 'Mul', input: [p('ln'), p('g1')], output: [p('gm')] },
      { opType: 'Mul', input: [p('gm'), 'half'], output: [l === layers - 1 ? 'output' : p('out')] },
    );
    x = p('out');
  }
  return h.encodeModel({ name: 'block', nodes, initializers: inits,
    inputs: [h.tensorInfo('input', 'float32', ['batch', seq, dim])], outputs: [h.tensorInfo('output', 'float32', ['batch', seq, dim])] });
}

const mlp = (sizes) => ({ bytes: () => h.mlpModel({ sizes, seed: 1 }), input: (b) => [[b, sizes[0]], 'input'] });
const models = {
  tiny: mlp([16, 32, 4]),
  small: mlp([64, 256, 16]),
  mlp256: mlp([256, 1024, 256]),
  mid: mlp([512, 4096, 512]),
  big: mlp([1024, 8192, 1024]),
  mlp5: mlp([16, 32, 32, 32, 32, 4]),
  block1: { bytes: () => blockModel(1, 32, 16), input: (b) => [[b, 16, 32], 'input'] },
  block: { bytes: () => blockModel(4, 32, 16), input: (b) => [[b, 16, 32], 'input'] },
  paddle: { bytes: () => fs.readFileSync(h.paddleOcrClsPath()), input: (b) => [[b, 3, 48, 192], 'x'] },
};
const base = (extra) => ({ intraOpNumThreads: 1, interOpNumThreads: 1, executionMode: 'sequential',
  extra: { session: { intra_op: { allow_spinning: '0' }, inter_op: { allow_spinning: '0' } } }, ...extra });
const feed = (m, batch) => { const [dims, name] = m.input(batch); return { [name]: new ort.Tensor('float32', new Float32Array(dims.reduce((a, b) => a * b, 1)).fill(0.5), dims) }; };
function pss() { return Number(/^Pss:\s+(\d+)/m.exec(fs.readFileSync('/proc/self/smaps_rollup', 'utf8'))[1]); }

async function mem(name, level, n) {
  const m = models[name];
  const options = base({ graphOptimizationLevel: level, enableCpuMemArena: false });
  // Every session its own copy of the bytes, as every model of a store is its own file.
  const bytes = m.bytes();
  const copies = Array.from({ length: n }, () => Uint8Array.from(bytes));
  const warm = await ort.InferenceSession.create(bytes, options);
  await warm.run(feed(m, 1));
  global.gc();
  const p0 = pss();
  const sessions = [];
  for (const copy of copies) sessions.push(await ort.InferenceSession.create(copy, options));
  global.gc();
  const p1 = pss();
  for (const s of sessions) await s.run(feed(m, 1));
  global.gc();
  const p2 = pss();
  console.log(JSON.stringify({ model: name, level, n, kibPerSessionLoaded: +((p1 - p0) / n).toFixed(1), kibPerSessionAfterRun: +((p2 - p0) / n).toFixed(1) }));
}

async function run(name, rounds) {
  const m = models[name];
  const out = { model: name };
  for (const batch of [1, 16]) {
    const input = feed(m, batch);
    const s = {};
    for (const level of ['all', 'basic']) s[level] = await ort.InferenceSession.create(m.bytes(), base({ graphOptimizationLevel: level }));
    // How many runs fill ~0.4 s at this size.
    for (let i = 0; i < 20; i++) await s.all.run(input);
    const t = process.hrtime.bigint(); for (let i = 0; i < 20; i++) await s.all.run(input);
    const per = Number(process.hrtime.bigint() - t) / 20;
    const reps = Math.max(20, Math.round(4e8 / per));
    const res = { all: [], basic: [] };
    for (let r = 0; r < rounds; r++) for (const level of r % 2 ? ['basic', 'all'] : ['all', 'basic']) {
      for (let i = 0; i < reps / 10; i++) await s[level].run(input);
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < reps; i++) await s[level].run(input);
      res[level].push(+(Number(process.hrtime.bigint() - t0) / reps / 1000).toFixed(1));
    }
    const med = (a) => [...a].sort((x, y) => x - y)[a.length >> 1];
    out[`batch${batch}`] = { ...res, basicOverAllTime: +(med(res.basic) / med(res.all)).toFixed(3), pairs: res.all.map((a, i) => +(res.basic[i] / a).toFixed(3)) };
  }
  console.log(JSON.stringify(out));
}

const [cmd, name, a, b] = process.argv.slice(2);
if (cmd === 'mem') mem(name, a, Number(b));
else if (cmd === 'run') run(name, Number(a ?? 5));
else for (const [k, m] of Object.entries(models)) { const bytes = m.bytes(); console.log(JSON.stringify({ model: k, fileBytes: bytes.length, nodes: onnx.ModelProto.decode(bytes).graph.node.length })); }
