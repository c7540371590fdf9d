/** HTTP calls to a running server (in-process or CLI): JSON requests, model loads, invocations. */
import http from 'node:http';
import { writeModelDir } from './onnx-models';

export interface JsonResponse {
  status: number;
  headers: Headers;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  text: string;
}

export async function request(url: string, init: RequestInit & { json?: unknown } = {}): Promise<JsonResponse> {
  const { json, ...rest } = init;
  const res = await fetch(url, {
    ...rest,
    ...(json === undefined
      ? {}
      : {
          body: JSON.stringify(json),
          headers: { 'content-type': 'application/json', ...(rest.headers as Record<string, string>) },
        }),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: jsonOrText(text), text };
}

function jsonOrText(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export function postJson(url: string, body: unknown): Promise<JsonResponse> {
  return request(url, { method: 'POST', json: body });
}

const keptAlive = new http.Agent({ keepAlive: true });

/**
 * postJson over node:http with kept-alive connections, for a bench that times requests from the
 * server's own machine: fetch spends ~2.3 ms of CPU a request there against ~0.6 ms, and on 2 cores
 * that is the server's CPU (8 shared loads in flight: bench-results/part28-loads/README.md).
 */
export function postJsonLean(url: string, body: unknown): Promise<Omit<JsonResponse, 'headers'>> {
  const data = Buffer.from(JSON.stringify(body));
  const headers = { 'content-type': 'application/json', 'content-length': data.length };
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', agent: keptAlive, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        resolve({ status: res.statusCode!, body: jsonOrText(text), text });
      });
    });
    req.on('error', reject);
    req.end(data);
  });
}

export function loadModel(
  t: { managementUrl: string },
  name: string,
  url: string,
  extra: Record<string, unknown> = {},
): Promise<JsonResponse> {
  return postJson(`${t.managementUrl}/models`, { model_name: name, url, ...extra });
}

/** Writes each model into the store and loads them all at once; every load must answer 200. */
export async function loadModels(
  t: { managementUrl: string; store: string },
  models: Record<string, Uint8Array>,
): Promise<void> {
  const answers = await Promise.all(
    Object.entries(models).map(([name, bytes]) => loadModel(t, name, writeModelDir(t.store, name, bytes))),
  );
  for (const r of answers) if (r.status !== 200) throw new Error(`load failed: ${r.status} ${r.text}`);
}

export function invoke(
  t: { url: string },
  name: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<JsonResponse> {
  return request(`${t.url}/models/${name}/invoke`, { method: 'POST', json: body, headers });
}
