/** The wire form of each malformed case (cases.ts), protobuf by hand included where a client library would refuse to encode it. */
import {
  codecBody,
  deep,
  flat,
  jsonBody,
  kBrokenNpy,
  kEmpty,
  npyDict,
  npyFile,
  oneRow,
  rowsOf,
  v2Tensor,
} from './bytes';
import { f32 } from '../float32';
import { type Call, carry, kserve, oipHttp, validCall } from './calls';
import { type BoundaryCase, type MalformedCase, type OipCarrier, kColumns, kInput } from './cases';

export function malformedCall(c: MalformedCase, model: string): Call {
  switch (c.attack) {
    case 'npy-zero-itemsize':
      return carry(c.carrier, model, {
        contentType: 'application/x-npy',
        body: npyFile(npyDict(c.descr, `(${c.rows}, ${kColumns})`), Buffer.alloc(c.dataBytes, 0x41)),
      });
    case 'npy-huge-shape':
      return carry(c.carrier, model, {
        contentType: 'application/x-npy',
        body: npyFile(npyDict(c.descr, c.shape), Buffer.alloc(c.dataBytes)),
      });
    case 'npy-code-point': {
      const data = Buffer.alloc(4 * c.points.length);
      c.points.forEach((p, i) => (c.bigEndian ? data.writeUInt32BE(p, 4 * i) : data.writeUInt32LE(p, 4 * i)));
      return carry(c.carrier, model, {
        contentType: 'application/x-npy',
        body: npyFile(npyDict(`${c.bigEndian ? '>' : '<'}U${c.points.length}`, '(1, 1)'), data),
      });
    }
    case 'npy-long-string': {
      const data = Buffer.alloc(4 * c.width);
      for (let i = 0; i < c.width; i++) data.writeUInt32LE(0x61 + (i % 26), 4 * i);
      return carry(c.carrier, model, {
        contentType: 'application/x-npy',
        body: npyFile(npyDict(`<U${c.width}`, '(1, 1)'), data),
      });
    }
    case 'npy-broken':
      return carry(c.carrier, model, { contentType: 'application/x-npy', body: kBrokenNpy[c.variant]() });
    case 'json-deep': {
      const nest = deep(c.depth, c.open);
      const text =
        c.shape === 'named'
          ? `{"inputs":{"${kInput}":${nest}}}`
          : c.shape === 'instances'
            ? `{"instances":${nest}}`
            : c.shape === 'v2'
              ? `{"inputs":[{"name":"${kInput}","shape":[1,${kColumns}],"datatype":"FP32","data":${nest}}]}`
              : nest;
      if (c.carrier === 'v2')
        return {
          transport: 'http',
          path: `/v2/models/${model}/infer`,
          headers: { 'content-type': 'application/json' },
          body: Buffer.from(
            c.shape === 'v2'
              ? text
              : `{"inputs":[{"name":"${kInput}","shape":[1,${kColumns}],"datatype":"FP32","data":${nest}}]}`,
          ),
        };
      return carry(c.carrier, model, { contentType: 'application/json', body: Buffer.from(text) });
    }
    case 'json-proto-name': {
      const r = oneRow;
      const text =
        c.where === 'named-input'
          ? `{"inputs":{"${c.name}":${JSON.stringify(r)}}}`
          : c.where === 'named-extra'
            ? `{"inputs":{"${kInput}":${JSON.stringify(r)},"${c.name}":${JSON.stringify(r)}}}`
            : c.where === 'v2-input'
              ? JSON.stringify({ inputs: [{ ...v2Tensor(r), name: c.name }] })
              : JSON.stringify({ inputs: [{ ...v2Tensor(r), datatype: c.name }] });
      return carry(c.carrier, model, { contentType: 'application/json', body: Buffer.from(text) });
    }
    case 'oip-proto-name':
      return oipCase(c.carrier, model, {
        name: c.where === 'input' ? c.name : kInput,
        datatype: c.where === 'datatype' ? c.name : 'FP32',
        outputs: c.where === 'output' ? [c.name] : [],
      });
    case 'oversized': {
      const n = c.bytes;
      switch (c.where) {
        case 'csv-0x01':
          return carry(c.carrier, model, { contentType: 'text/csv', body: Buffer.alloc(n, 0x01) });
        case 'json-element':
          return carry(c.carrier, model, {
            contentType: 'application/json',
            body: Buffer.from(`{"inputs":{"${kInput}":[["${'a'.repeat(n)}"]]}}`),
          });
        case 'json-input-name':
          return carry(c.carrier, model, {
            contentType: 'application/json',
            body: Buffer.from(`{"inputs":{"${'n'.repeat(n)}":[[1]]}}`),
          });
        case 'v2-datatype':
          return carry(c.carrier, model, {
            contentType: 'application/json',
            body: Buffer.from(JSON.stringify({ inputs: [{ ...v2Tensor(oneRow), datatype: 'F'.repeat(n) }] })),
          });
        case 'npy-header':
          return carry(c.carrier, model, {
            contentType: 'application/x-npy',
            body: npyFile(
              `{'descr': '${'<'.repeat(n)}f4', 'fortran_order': False, 'shape': (1, 16), }`,
              f32(flat(oneRow)),
              2,
            ),
          });
      }
      break;
    }
    case 'oip-oversized': {
      const long = 'z'.repeat(c.bytes);
      return oipCase(c.carrier, model, {
        name: c.where === 'name' ? long : kInput,
        datatype: c.where === 'datatype' ? long : 'FP32',
        outputs: c.where === 'output' ? [long] : [],
      });
    }
    case 'lying-content-type':
      return carry(c.carrier, model, { contentType: c.declared, body: codecBody(c.actual, oneRow) });
    case 'lying-header-length': {
      const header = {
        inputs: [
          c.binary
            ? { name: kInput, shape: [1, kColumns], datatype: 'FP32', parameters: { binary_data_size: 64 } }
            : v2Tensor(oneRow),
        ],
      };
      return oipHttp(c.carrier, model, header, c.binary ? f32(flat(oneRow)) : null, {
        how: c.how,
        declared: c.declared,
      });
    }
    case 'lying-binary-size': {
      const sizes: Record<typeof c.size, unknown> = {
        minus4: 60,
        plus4: 68,
        zero: 0,
        negative: -64,
        fraction: 63.5,
        string: '64',
        huge: 2 ** 53,
        null: null,
        bool: true,
      };
      const header = {
        inputs: [
          { name: kInput, shape: [1, kColumns], datatype: 'FP32', parameters: { binary_data_size: sizes[c.size] } },
        ],
      };
      return oipHttp(c.carrier, model, header, f32(flat(oneRow)));
    }
    case 'lying-shape': {
      if (c.carrier === 'invoke-json')
        return carry('invoke', model, {
          contentType: 'application/json',
          body: Buffer.from(JSON.stringify({ inputs: [{ ...v2Tensor(oneRow), shape: c.shape }] })),
        });
      return oipCase(c.carrier, model, { shape: c.shape });
    }
    case 'bytes-empty': {
      const shape = c.rows16 && c.count % kColumns === 0 ? [c.count / kColumns, kColumns] : [c.count];
      return oipCase(c.carrier, model, {
        datatype: 'BYTES',
        shape,
        bytes: Buffer.alloc(4 * c.count),
        typed: { bytes_contents: new Array<Buffer>(c.count).fill(kEmpty) },
      });
    }
    case 'duplicate-input': {
      const second = c.second === 'same' ? oneRow : rowsOf(2);
      if (c.carrier === 'invoke-json')
        return carry('invoke', model, {
          contentType: 'application/json',
          body: Buffer.from(JSON.stringify({ inputs: [v2Tensor(oneRow), v2Tensor(second)] })),
        });
      const inputs = [oneRow, second].map((r) => ({
        name: kInput,
        datatype: 'FP32',
        shape: [r.length, kColumns],
        bytes: f32(flat(r)),
      }));
      if (c.carrier.startsWith('kserve')) return kserve(model, c.carrier === 'kserve-raw', inputs);
      const header = {
        inputs: inputs.map((t) => ({
          name: t.name,
          datatype: t.datatype,
          shape: t.shape,
          parameters: { binary_data_size: t.bytes.length },
        })),
      };
      return oipHttp(c.carrier as 'v2' | 'invoke-oip', model, header, Buffer.concat(inputs.map((t) => t.bytes)));
    }
    case 'bad-values': {
      const bad = badRows(c.variant);
      if (c.codec === 'csv')
        return carry(c.carrier, model, { contentType: 'text/csv', body: Buffer.from(kBadCsv[c.variant]) });
      return carry(c.carrier, model, { contentType: 'application/json', body: Buffer.from(jsonBody(c.codec, bad)) });
    }
    case 'json-syntax':
      return carry(c.carrier, model, { contentType: 'application/json', body: Buffer.from(c.body) });
    case 'kserve-contents': {
      const bytes = f32(flat(oneRow));
      const input = { name: kInput, datatype: 'FP32', shape: ['1', String(kColumns)] };
      const request: Record<string, unknown> = {
        model_name: model,
        inputs: [{ ...input, contents: { fp32_contents: flat(oneRow) } }],
        outputs: [],
        raw_input_contents: [],
      };
      if (c.variant === 'raw-count') Object.assign(request, { inputs: [input], raw_input_contents: [bytes, bytes] });
      if (c.variant === 'typed-field')
        Object.assign(request, { inputs: [{ ...input, contents: { int_contents: flat(oneRow).map(Math.trunc) } }] });
      if (c.variant === 'typed-count')
        Object.assign(request, { inputs: [{ ...input, contents: { fp32_contents: flat(oneRow).slice(1) } }] });
      if (c.variant === 'raw-for-no-input') Object.assign(request, { inputs: [], raw_input_contents: [bytes] });
      return { transport: 'kserve', request };
    }
    case 'wire-type':
      return { transport: 'grpc-raw', service: c.carrier, bytes: wireTypeMessage(c, model) };
    case 'torchserve-no-body': {
      const input = Object.fromEntries(c.keys.map((k) => [k, Buffer.from(jsonBody('bare', oneRow))]));
      return { transport: 'torchserve', request: { model_name: model, input } };
    }
  }
  throw new Error(`no call for ${JSON.stringify(c)}`);
}

// Protobuf by hand: what the client library would never encode.
function pbVarint(n: number): Buffer {
  const out: number[] = [];
  for (; n >= 0x80; n = Math.floor(n / 128)) out.push((n % 128) | 0x80);
  out.push(n);
  return Buffer.from(out);
}
const pbTag = (field: number, wire: number) => pbVarint(field * 8 + wire);
const pbLen = (field: number, bytes: Buffer) => Buffer.concat([pbTag(field, 2), pbVarint(bytes.length), bytes]);
const pbString = (field: number, text: string) => pbLen(field, Buffer.from(text));

/** The field of a wire type no proto3 message has: an empty group, a lone group end, or a tag of wire type 6 or 7. */
function strayField(wire: 3 | 4 | 6 | 7, field: number): Buffer {
  if (wire === 3) return Buffer.concat([pbTag(field, 3), pbTag(field, 4)]);
  if (wire === 4) return pbTag(field, 4);
  return Buffer.concat([pbTag(field, wire), Buffer.from([0])]);
}

/** A valid one-row request with a stray field inserted (at the start, the end, or inside its input or map entry). */
function wireTypeMessage(c: Extract<MalformedCase, { attack: 'wire-type' }>, model: string): Buffer {
  const stray = strayField(c.wire, c.field);
  const nested = c.where === 'nested' ? stray : kEmpty;
  let message: Buffer;
  if (c.carrier === 'torchserve') {
    const entry = Buffer.concat([pbString(1, 'data'), nested, pbLen(2, Buffer.from(jsonBody('bare', oneRow)))]);
    message = Buffer.concat([pbString(1, model), pbLen(3, entry)]);
  } else {
    const values = Buffer.concat(flat(oneRow).map((v) => f32([v])));
    const input = Buffer.concat([
      pbString(1, kInput),
      pbString(2, 'FP32'),
      pbLen(3, Buffer.concat([pbVarint(1), pbVarint(kColumns)])),
      nested,
      pbLen(5, pbLen(6, values)),
    ]);
    message = Buffer.concat([pbString(1, model), pbLen(5, input)]);
  }
  const after =
    c.then === 'bytes-empty'
      ? pbLen(
          5,
          Buffer.concat([
            pbString(1, 'b'),
            pbString(2, 'BYTES'),
            pbLen(3, pbVarint(1_000_000)),
            pbLen(5, Buffer.alloc(2_000_000, Buffer.from([0x42, 0x00]))),
          ]),
        )
      : kEmpty;
  const at = c.where === 'start' ? [stray, message] : c.where === 'end' ? [message, stray] : [message];
  return Buffer.concat([...at, after]);
}

/** CSV that is not rows of 16 numbers ("nan" and "inf" are numbers there, and a quoted "1" is 1). */
const kBadCsv: Record<Extract<MalformedCase, { attack: 'bad-values' }>['variant'], string> = {
  string: `${flat(oneRow).slice(1).join(',')},"x"\n`,
  null: `${flat(oneRow).slice(1).join(',')},null\n`,
  bool: `${flat(oneRow).slice(1).join(',')},true\n`,
  object: `${flat(oneRow).slice(1).join(',')},{}\n`,
  ragged: `${flat(oneRow).join(',')}\n${flat(oneRow).slice(1).join(',')}\n`,
  columns4: '1,2,3,4\n',
  rank3: `${flat(oneRow).join(',')},${flat(oneRow).join(',')}\n`,
  empty: '\n\n',
  word: `${flat(oneRow).slice(1).join(',')},abc\n`,
  wide: `${'1,'.repeat(299_999)}1\n`,
};

/** JSON rows that are not float32 [n, 16] numbers. */
function badRows(variant: Extract<MalformedCase, { attack: 'bad-values' }>['variant']): unknown[] {
  const row = flat(oneRow);
  switch (variant) {
    case 'string':
      return [[...row.slice(1), 'x']];
    case 'null':
      return [[...row.slice(1), null]];
    case 'bool':
      return [[...row.slice(1), true]];
    case 'object':
      return [[...row.slice(1), { v: 1 }]];
    case 'ragged':
      return [row, row.slice(1)];
    case 'columns4':
      return [[1, 2, 3, 4]];
    case 'rank3':
      return [[row]];
    case 'empty':
      return [];
    case 'word':
      return [[...row.slice(1), 'abc']];
    case 'wide':
      return [new Array<number>(300_000).fill(1)];
  }
}

/** One OIP input (one row by default, as binary or JSON data), altered as the attack says, on any OIP carrier. */
function oipCase(
  carrier: OipCarrier,
  model: string,
  o: {
    name?: string;
    datatype?: string;
    shape?: Array<number | string>;
    bytes?: Buffer;
    typed?: Record<string, unknown[]>;
    outputs?: string[];
  },
): Call {
  const name = o.name ?? kInput;
  const datatype = o.datatype ?? 'FP32';
  const shape = o.shape ?? [1, kColumns];
  const bytes = o.bytes ?? f32(flat(oneRow));
  const outputs = o.outputs ?? [];
  if (carrier === 'kserve-typed' || carrier === 'kserve-raw') {
    const typed = o.typed ?? (datatype === 'FP32' || !o.bytes ? { fp32_contents: flat(oneRow) } : undefined);
    return kserve(model, carrier === 'kserve-raw', [{ name, datatype, shape, bytes, typed }], outputs);
  }
  const header = {
    inputs: [{ name, datatype, shape, parameters: { binary_data_size: bytes.length } }],
    ...(outputs.length ? { outputs: outputs.map((n) => ({ name: n })) } : {}),
  };
  return oipHttp(carrier, model, header, bytes);
}

export function callOf(c: BoundaryCase, model: string): Call {
  return c.kind === 'valid' ? validCall(c, model) : malformedCall(c, model);
}
