/** A boundary case as it goes on the wire: the HTTP request or gRPC message of a valid case, on every route and codec. */
import { OIP_TYPE, codecBody, flat, kMediaType, v2Tensor } from './bytes';
import { f32 } from '../float32';
import { type AcceptKind, type Carrier, type ValidCase, kColumns, kInput, kOutput } from './cases';

/** A request as it goes on the wire. */
export type Call =
  | { transport: 'http'; path: string; headers: Record<string, string>; body: Buffer; chunks?: number[] }
  | { transport: 'grpc-raw'; service: 'kserve' | 'torchserve'; bytes: Buffer }
  | { transport: 'kserve'; request: Record<string, unknown> }
  | { transport: 'torchserve'; request: Record<string, unknown> };

/** A body and its headers, sent on an HTTP invoke route or as TorchServe Predictions. */
interface Payload {
  contentType: string | null;
  body: Buffer;
  headers?: Record<string, string>;
}

export function carry(carrier: Carrier, model: string, p: Payload): Call {
  if (carrier === 'torchserve') {
    const input: Record<string, Buffer> = { data: p.body };
    if (p.contentType !== null) input['content-type'] = Buffer.from(p.contentType);
    return { transport: 'torchserve', request: { model_name: model, input } };
  }
  const headers: Record<string, string> = { ...p.headers };
  if (p.contentType !== null) headers['content-type'] = p.contentType;
  const path =
    carrier === 'invoke'
      ? `/models/${model}/invoke`
      : carrier === 'predictions'
        ? `/predictions/${model}`
        : '/invocations';
  if (carrier === 'invocations') headers['x-amzn-sagemaker-target-model'] = model;
  return { transport: 'http', path, headers, body: p.body };
}

/** A v2 inference header (and its binary tensors) on /v2 infer or an invoke route with the OIP content type. */
export function oipHttp(
  carrier: 'v2' | 'invoke-oip',
  model: string,
  header: unknown,
  binary: Buffer | null,
  lie?: { how: 'header' | 'content-type'; declared: string },
): Call {
  const json = Buffer.from(JSON.stringify(header));
  const body = binary ? Buffer.concat([json, binary]) : json;
  const headers: Record<string, string> = {};
  const length = lie ? declaredLength(lie.declared, json.length) : String(json.length);
  const how = lie?.how ?? (carrier === 'v2' ? 'header' : 'content-type');
  if (carrier === 'v2') {
    headers['content-type'] = how === 'header' ? 'application/json' : `${OIP_TYPE};json-header-size=${length}`;
    if (how === 'header' && (binary || lie)) headers['inference-header-content-length'] = length;
    return { transport: 'http', path: `/v2/models/${model}/infer`, headers, body };
  }
  headers['content-type'] = how === 'header' || (!binary && !lie) ? OIP_TYPE : `${OIP_TYPE};json-header-size=${length}`;
  if (how === 'header' && lie) headers['inference-header-content-length'] = length;
  return { transport: 'http', path: `/models/${model}/invoke`, headers, body };
}

function declaredLength(declared: string, actual: number): string {
  return /^[+-]\d+$/.test(declared) ? String(actual + Number(declared)) : declared;
}

/** A KServe ModelInferRequest for tensors given as v2 inputs with their bytes. */
export function kserve(
  model: string,
  raw: boolean,
  inputs: Array<{
    name: string;
    datatype: string;
    shape: Array<number | string>;
    bytes: Buffer;
    typed?: Record<string, unknown[]>;
  }>,
  outputs: string[] = [],
): Call {
  return {
    transport: 'kserve',
    request: {
      model_name: model,
      inputs: inputs.map((t) => ({
        name: t.name,
        datatype: t.datatype,
        shape: t.shape.map((d) => String(d)),
        ...(raw
          ? {}
          : {
              contents: t.typed ?? {
                fp32_contents: Array.from(new Float32Array(t.bytes.buffer, t.bytes.byteOffset, t.bytes.length / 4)),
              },
            }),
      })),
      outputs: outputs.map((name) => ({ name })),
      raw_input_contents: raw ? inputs.map((t) => t.bytes) : [],
    },
  };
}

const kAccept: Record<AcceptKind, string | null> = {
  none: null,
  '*/*': '*/*',
  json: 'application/json',
  csv: 'text/csv',
  npy: 'application/x-npy',
  'json-proto-params': 'application/json;__proto__=1;constructor=2;q=1',
};

export function validCall(c: ValidCase, model: string): Call {
  switch (c.via) {
    case 'http': {
      const media = kMediaType[c.codec];
      const contentType =
        c.contentType === 'exact'
          ? media
          : c.contentType === 'params'
            ? `${media.toUpperCase()}; charset=utf-8`
            : media === 'application/json'
              ? null
              : media;
      const accept = kAccept[c.accept];
      return {
        ...carry(c.route, model, {
          contentType,
          body: codecBody(c.codec, c.rows, c.npy),
          headers: accept === null ? {} : { accept },
        }),
        chunks: c.chunks,
      } as Call;
    }
    case 'v2': {
      const binary = c.binaryIn !== 'none';
      const input = binary
        ? {
            name: kInput,
            shape: [c.rows.length, kColumns],
            datatype: 'FP32',
            parameters: { binary_data_size: c.rows.length * kColumns * 4 },
          }
        : v2Tensor(c.rows, c.nested);
      const header = {
        id: 'canary',
        inputs: [input],
        ...(c.binaryOut ? { outputs: [{ name: kOutput, parameters: { binary_data: true } }] } : {}),
      };
      const json = Buffer.from(JSON.stringify(header));
      if (!binary)
        return {
          transport: 'http',
          path: `/v2/models/${model}/infer`,
          headers: { 'content-type': 'application/json' },
          body: json,
          chunks: c.chunks,
        };
      const headers: Record<string, string> =
        c.binaryIn === 'header'
          ? { 'content-type': 'application/octet-stream', 'inference-header-content-length': String(json.length) }
          : { 'content-type': `${OIP_TYPE};json-header-size=${json.length}` };
      return {
        transport: 'http',
        path: `/v2/models/${model}/infer`,
        headers,
        body: Buffer.concat([json, f32(flat(c.rows))]),
        chunks: c.chunks,
      };
    }
    case 'kserve':
      return kserve(
        model,
        c.raw,
        [{ name: kInput, datatype: 'FP32', shape: [c.rows.length, kColumns], bytes: f32(flat(c.rows)) }],
        c.namedOutput ? [kOutput] : [],
      );
    case 'torchserve': {
      // fromEntries makes "__proto__" an own key, as a map entry decoded off the wire is.
      const entries: Array<[string, Buffer]> = c.extraKeys.map((k) => [k, Buffer.from('x')]);
      entries.push([c.key, codecBody(c.codec, c.rows)]);
      if (c.codec === 'csv' || c.codec === 'npy') entries.push(['content-type', Buffer.from(kMediaType[c.codec])]);
      return { transport: 'torchserve', request: { model_name: model, input: Object.fromEntries(entries) } };
    }
  }
}
