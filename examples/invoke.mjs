// The same requests with Node's fetch (Node 20+):  node examples/invoke.mjs [URL]
const url = (process.argv[2] ?? 'http://127.0.0.1:8080').replace(/\/+$/, '');

async function post(path, body, headers) {
  const res = await fetch(`${url}${path}`, { method: 'POST', body, headers });
  const text = await res.text();
  if (!res.ok) throw new Error(`POST ${path} -> ${res.status}: ${text}`);
  return text;
}

console.log('json:', await post('/models/mlp/invoke', JSON.stringify({ inputs: { input: [[1, 2, 3, 4]] } }), { 'Content-Type': 'application/json' }));
console.log('csv:', await post('/models/mlp/invoke', '1,2,3,4\n0,0,0,0\n', { 'Content-Type': 'text/csv', Accept: 'text/csv' }));
const v2 = { id: '1', inputs: [{ name: 'input', shape: [1, 4], datatype: 'FP32', data: [1, 2, 3, 4] }] };
console.log('v2:', await post('/v2/models/mlp/infer', JSON.stringify(v2), { 'Content-Type': 'application/json' }));
