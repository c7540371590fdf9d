// Syscalls of the server's main thread over N calls made one at a time, gRPC ModelInfer (raw) then
// HTTP JSON invoke, tiny MLP: `node bench-results/part21-grpc/strace-calls.js N [-c]` from the
// repository root after `npm run -s build` (needs strace). -c: counts (strace -c); else each call.
const { spawn } = require('node:child_process');
const net = require('node:net');
const root = require('node:path').join(__dirname, '..', '..', 'dist');
const { startBenchServer } = require(`${root}/scripts/bench/bench-run.js`);
const { connect, unaryCall } = require(`${root}/src/cli/grpc-calls.js`);
const { postJson } = require(`${root}/harness/http-requests.js`);
const { writeTinyMlp } = require(`${root}/harness/onnx-models.js`);

const calls = Number(process.argv[2] ?? 200);
const counts = process.argv.includes('-c');
(async () => {
  const s = net.createServer().listen(0);
  await new Promise((r) => s.once('listening', r));
  const port = s.address().port;
  await new Promise((r) => s.close(r));
  const server = await startBenchServer([`grpc_inference_port=${port}`]);
  const clients = connect(`127.0.0.1:${port}`);
  await postJson(`${server.url}/models`, { model_name: 'tiny', url: writeTinyMlp(server.store), initial_workers: 1 });
  const row = Array.from({ length: 16 }, (_, i) => i / 16);
  const infer = {
    model_name: 'tiny',
    inputs: [{ name: 'input', datatype: 'FP32', shape: [1, 16] }],
    raw_input_contents: [Buffer.from(Float32Array.from(row).buffer)],
  };
  const one = {
    grpc: () => unaryCall(clients.kserve, 'ModelInfer', infer),
    http: () => postJson(`${server.url}/models/tiny/invoke`, { inputs: { input: [row] } }),
  };
  for (let i = 0; i < 50; i++) for (const f of Object.values(one)) await f();
  for (const [which, f] of Object.entries(one)) {
    const args = ['-p', String(server.child.pid), '-s', '24', '-e', 'trace=read,write,writev,epoll_pwait'];
    const st = spawn('strace', counts ? ['-c', ...args] : args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let out = '';
    st.stderr.on('data', (d) => (out += d));
    await new Promise((r) => setTimeout(r, 1000));
    for (let i = 0; i < calls; i++) await f();
    st.kill('SIGINT');
    await new Promise((r) => st.once('exit', r));
    console.log(`== ${which}: ${calls} calls, one at a time\n${out}`);
  }
  clients.close();
  await server.stop();
})();
