// Issue 49 C1 figures: idle gRPC connections kept past max_connections, and server RSS under
// headers-only ModelInfer streams without a token. Prints one JSON object.
// Usage: node grpc-connections.js MAIN_JS PORT_BASE
const { spawn } = require('node:child_process');
const fs = require('node:fs'); const net = require('node:net'); const http2 = require('node:http2');
const os = require('node:os'); const path = require('node:path');
const [mainJs, base] = [process.argv[2], Number(process.argv[3] ?? 19000)];
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'c1-'));
fs.mkdirSync(path.join(dir, 'store'));
fs.writeFileSync(path.join(dir, 'config.properties'), [
  `inference_address=http://127.0.0.1:${base}`, `management_address=http://127.0.0.1:${base + 1}`,
  `model_store=${dir}/store`, `grpc_inference_port=${base + 2}`, 'max_connections=100',
  'inference_token=secret-token-123456789012345678901234', 'autoscale=off'].join('\n'));
const srv = spawn(process.execPath, [mainJs, '--mms-config', path.join(dir, 'config.properties')], { stdio: ['ignore', 'pipe', 'pipe'] });
let out = ''; srv.stdout.on('data', (d) => (out += d)); srv.stderr.on('data', (d) => (out += d));
const rss = () => Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${srv.pid}/status`, 'utf8'))[1]) / 1024;
const wait = (ms) => new Promise((r) => setTimeout(r, ms));
(async () => {
  for (let i = 0; i < 200 && !/ready|listening/i.test(out); i++) await wait(100);
  for (let i = 0; i < 200; i++) {
    const up = await new Promise((r) => { const t = net.connect(base + 2, '127.0.0.1'); t.on('connect', () => { t.destroy(); r(true); }); t.on('error', () => r(false)); });
    if (up) break; await wait(100);
  }
  await wait(1000);
  // 1. 250 TCP connections that send nothing.
  const socks = []; let closed = 0; const errs = {};
  for (let i = 0; i < 250; i++) { const s = net.connect(base + 2, '127.0.0.1'); s.on('close', () => closed++); s.on('error', (e) => { errs[e.code] = (errs[e.code] ?? 0) + 1; }); socks.push(s); }
  await wait(3000);
  const kept = 250 - closed;
  for (const s of socks) s.destroy();
  await wait(1000);
  // 2. headers-only ModelInfer streams, no token, on 2 connections.
  const rss0 = rss(); let opened = 0, refused = 0, answered = 0; const serrs = {};
  const sessions = [0, 1].map(() => http2.connect(`http://127.0.0.1:${base + 2}`, { peerMaxConcurrentStreams: 100000 }));
  for (const s of sessions) s.on('error', () => {});
  const streams = [];
  for (const s of sessions) for (let i = 0; i < 12000; i++) {
    try {
      const st = s.request({ ':method': 'POST', ':path': '/inference.GRPCInferenceService/ModelInfer', 'content-type': 'application/grpc', te: 'trailers' }, { endStream: false });
      opened++; st.on('error', (e) => { refused++; serrs[e.code] = (serrs[e.code] ?? 0) + 1; }); st.on('response', () => { answered++; }); st.on('data', () => {}); streams.push(st);
    } catch { refused++; }
  }
  await wait(5000);
  const rss1 = rss();
  console.log(JSON.stringify({ main: mainJs, idleConnectionsOpened: 250, idleConnectionsKept: kept, connectErrors: errs, streamsRequested: opened, streamsAnswered: answered, streamsRefused: refused, streamErrors: serrs, serverRssMiBBefore: Math.round(rss0), serverRssMiBAfter: Math.round(rss1) }));
  for (const s of sessions) s.destroy();
  srv.kill('SIGKILL'); fs.rmSync(dir, { recursive: true, force: true }); process.exit(0);
})();
