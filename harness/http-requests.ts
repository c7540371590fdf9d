/** HTTP calls to a running server (in-process or CLI): JSON requests, model loads, invocations. */
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
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: keep the text
  }
  return { status: res.status, headers: res.headers, body, text };
}

export function postJson(url: string, body: unknown): Promise<JsonResponse> {
  return request(url, { method: 'POST', json: body });
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
