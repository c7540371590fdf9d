/** Reading an outcome: a refusal small and honest enough, or a valid case's rows in whatever codec answered it. */
import { type BoundaryCase, type JsonShape, type ValidCase, kColumns, kMaxErrorBytes, kOutput } from './cases';
import type { Outcome } from './sending';

const kGrpcOk = 0;
const kGrpcInvalidArgument = 3;
const kGrpcNames = [
  'OK',
  'CANCELLED',
  'UNKNOWN',
  'INVALID_ARGUMENT',
  'DEADLINE_EXCEEDED',
  'NOT_FOUND',
  'ALREADY_EXISTS',
  'PERMISSION_DENIED',
  'RESOURCE_EXHAUSTED',
  'FAILED_PRECONDITION',
  'ABORTED',
  'OUT_OF_RANGE',
  'UNIMPLEMENTED',
  'INTERNAL',
  'UNAVAILABLE',
  'DATA_LOSS',
  'UNAUTHENTICATED',
];

/** "HTTP 500 MME_ERR_INTERNAL" or "gRPC INTERNAL MME_ERR_INTERNAL": what a failure report says came back. */
export function describeOutcome(o: Outcome): string {
  if (o.transportError) return `no answer (${o.transportError})`;
  const status = o.transport === 'http' ? `HTTP ${o.status}` : `gRPC ${kGrpcNames[o.status] ?? o.status}`;
  return `${status}${o.errorCode ? ` ${o.errorCode}` : ''}`;
}

function succeeded(o: Outcome): boolean {
  return !o.transportError && (o.transport === 'http' ? o.status === 200 : o.status === kGrpcOk);
}

/**
 * Why a malformed case's outcome breaks the rules (a small 4xx, INVALID_ARGUMENT over gRPC), or
 * null: `what` stays the same from run to run, `detail` has the numbers.
 */
export function refusalProblem(o: Outcome): { what: string; detail: string } | null {
  if (o.transportError) return { what: 'no answer', detail: describeOutcome(o) };
  const refused = o.transport === 'http' ? o.status >= 400 && o.status < 500 : o.status === kGrpcInvalidArgument;
  if (!refused) {
    const what = `${describeOutcome(o)} instead of ${o.transport === 'http' ? 'a 4xx' : 'INVALID_ARGUMENT'}`;
    return { what, detail: what };
  }
  if (o.errorBytes > kMaxErrorBytes)
    return { what: `${describeOutcome(o)} over ${kMaxErrorBytes} bytes`, detail: `a ${o.errorBytes}-byte error` };
  return null;
}

/** The rows of a valid case's answer, whatever the route and codec it was answered in; throws when the answer is not one. */
export function answerRows(c: ValidCase, o: Outcome): number[][] {
  if (!succeeded(o)) throw new Error(`${describeOutcome(o)}: ${o.body.toString('utf8').slice(0, 300)}`);
  switch (c.via) {
    case 'http': {
      if (c.accept === 'csv') return csvRows(o.body.toString('utf8'));
      if (c.accept === 'npy') return npyAnswerRows(o.body);
      const json = JSON.parse(o.body.toString('utf8')) as Record<string, unknown>;
      return jsonRows(c.codec === 'csv' || c.codec === 'npy' ? 'bare' : c.codec, json);
    }
    case 'torchserve': {
      const json = JSON.parse(o.body.toString('utf8')) as Record<string, unknown>;
      return jsonRows(c.codec === 'csv' || c.codec === 'npy' ? 'bare' : c.codec, json);
    }
    case 'v2': {
      const headerLength = o.headers['inference-header-content-length'];
      if (!c.binaryOut) {
        if (headerLength !== undefined) throw new Error('a JSON answer came with Inference-Header-Content-Length');
        return jsonRows('v2', JSON.parse(o.body.toString('utf8')) as Record<string, unknown>);
      }
      const n = Number(headerLength);
      const header = JSON.parse(o.body.subarray(0, n).toString('utf8')) as {
        outputs: Array<{ name: string; shape: number[]; parameters?: { binary_data_size?: number } }>;
      };
      const out = header.outputs.find((t) => t.name === kOutput)!;
      const bin = o.body.subarray(n);
      if (out.parameters?.binary_data_size !== bin.length)
        throw new Error(`binary_data_size ${out.parameters?.binary_data_size} but ${bin.length} bytes follow`);
      return reshape(Array.from(new Float32Array(Uint8Array.from(bin).buffer)), out.shape);
    }
    case 'kserve': {
      const res = o.message as {
        outputs: Array<{ name: string; shape: string[]; contents?: { fp32_contents?: number[] } }>;
        raw_output_contents: Buffer[];
      };
      const i = res.outputs.findIndex((t) => t.name === kOutput);
      const shape = res.outputs[i].shape.map(Number);
      const values = c.raw
        ? Array.from(new Float32Array(Uint8Array.from(res.raw_output_contents[i]).buffer))
        : res.outputs[i].contents!.fp32_contents!;
      return reshape(values, shape);
    }
  }
}

function jsonRows(format: JsonShape, json: Record<string, unknown>): number[][] {
  switch (format) {
    case 'named':
      return (json.outputs as Record<string, number[][]>)[kOutput];
    case 'instances':
      return json.predictions as number[][];
    case 'bare':
      return json as unknown as number[][];
    case 'v2': {
      const out = (json.outputs as Array<{ name: string; shape: number[]; data: number[] }>).find(
        (t) => t.name === kOutput,
      )!;
      return reshape(out.data, out.shape);
    }
  }
}

function reshape(values: readonly number[], shape: readonly number[]): number[][] {
  if (shape.length !== 2 || shape[1] !== kColumns || values.length !== shape[0] * kColumns)
    throw new Error(`answer shape [${shape.join(', ')}] with ${values.length} values`);
  return Array.from({ length: shape[0] }, (_, r) => values.slice(r * kColumns, (r + 1) * kColumns));
}

/** The rows of a CSV answer: one line a row, numbers separated by commas. */
export function csvRows(text: string): number[][] {
  return text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => l.split(',').map(Number));
}

/** A float32 .npy answer ('<f4', C order), read independently of the server's own codec. */
function npyAnswerRows(b: Buffer): number[][] {
  const prefix = b[6] === 1 ? 10 : 12;
  const length = b[6] === 1 ? b.readUInt16LE(8) : b.readUInt32LE(8);
  const text = b.toString('latin1', prefix, prefix + length);
  if (!/'descr': '<f4'/.test(text) || !/'fortran_order': False/.test(text))
    throw new Error(`.npy answer header ${text.trim()}`);
  const shape = /'shape': \(([^)]*)\)/
    .exec(text)![1]
    .split(',')
    .map((d) => d.trim())
    .filter((d) => d !== '')
    .map(Number);
  return reshape(Array.from(new Float32Array(Uint8Array.from(b.subarray(prefix + length)).buffer)), shape);
}

/** A short name for a case in reports: its route and codec or attack. */
export function caseLabel(c: BoundaryCase): string {
  if (c.kind === 'valid') {
    switch (c.via) {
      case 'http':
        return `canary ${c.route}/${c.codec === 'npy' ? `npy ${c.npy}` : c.codec}`;
      case 'v2':
        return `canary v2/${c.binaryIn === 'none' ? 'json' : 'binary'}`;
      case 'kserve':
        return `canary kserve/${c.raw ? 'raw' : 'typed'}`;
      case 'torchserve':
        return `canary torchserve/${c.codec}`;
    }
  }
  const where = 'carrier' in c ? c.carrier : c.attack.startsWith('kserve') ? 'kserve' : 'torchserve';
  return `${where}/${c.attack}`;
}
