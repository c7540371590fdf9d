/**
 * Requests at the server's boundary, valid and hostile, over every codec and route: SageMaker
 * invoke (/models/{name}/invoke, /invocations, /predictions) with JSON (named, instances, v2, bare),
 * CSV and .npy; /v2/models/{name}/infer JSON and binary; KServe ModelInfer (typed and raw
 * contents) and TorchServe Predictions over gRPC. This file holds what a case is; the others make
 * its bytes (bytes.ts), generate it (generators.ts), put it on the wire (calls.ts for valid cases,
 * attacks.ts for malformed ones), send it (sending.ts) and read its answer (answers.ts).
 *
 * A case is plain data (what fast-check prints as a counterexample and a regression test keeps);
 * its bytes are built only when it is sent, so a 6 MB body or 300 000 levels of nesting cost a few
 * characters in a report. Every case targets a model with one input `x` (float32 [batch, 16]) and
 * one output `y`: y = x + 1 (harness/onnx-models.ts addModel), so a valid case has a known
 * answer and anything else is malformed for it. Valid cases are the canaries of
 * scripts/hardening/boundary-fuzz.ts, malformed ones the attacks.
 */

export const kInput = 'x';
export const kOutput = 'y';
export const kColumns = 16;

/** Largest error body (HTTP) or status details plus trailing metadata (gRPC) a refusal may carry. */
export const kMaxErrorBytes = 64 * 1024;

export type HttpRoute = 'invoke' | 'invocations' | 'predictions';
export type JsonShape = 'named' | 'instances' | 'v2' | 'bare';
export type BodyCodec = JsonShape | 'csv' | 'npy';
/** How a valid .npy body lays out its rows. */
export type NpyLayout = '<f4' | '>f4' | '<f8' | '<i4' | 'fortran' | 'v2' | 'v3';
export type AcceptKind = 'none' | '*/*' | 'json' | 'csv' | 'npy' | 'json-proto-params';
export type ProtoName = '__proto__' | 'constructor' | 'toString' | 'hasOwnProperty' | 'valueOf';

export const kProtoNames: readonly ProtoName[] = ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf'];

/** A request with a known answer: rows of float32 values whose answer is each value + 1. */
export type ValidCase =
  | {
      kind: 'valid';
      via: 'http';
      route: HttpRoute;
      codec: BodyCodec;
      npy: NpyLayout;
      accept: AcceptKind;
      contentType: 'exact' | 'absent' | 'params';
      rows: number[][];
      chunks?: number[];
    }
  | {
      kind: 'valid';
      via: 'v2';
      binaryIn: 'none' | 'header' | 'content-type';
      binaryOut: boolean;
      nested: boolean;
      rows: number[][];
      chunks?: number[];
    }
  | { kind: 'valid'; via: 'kserve'; raw: boolean; namedOutput: boolean; rows: number[][] }
  | {
      kind: 'valid';
      via: 'torchserve';
      codec: BodyCodec;
      key: 'data' | 'body';
      extraKeys: ProtoName[];
      rows: number[][];
    };

/** Where a body-level attack travels: an HTTP invoke route, or TorchServe Predictions. */
export type Carrier = HttpRoute | 'torchserve';
/** Where an OIP attack travels: /v2 infer, an invoke route with the OIP content type, or KServe (typed or raw contents). */
export type OipCarrier = 'v2' | 'invoke-oip' | 'kserve-typed' | 'kserve-raw';

/** Requests no model can run: each must be refused alone with a small 4xx (INVALID_ARGUMENT over gRPC). */
export type MalformedCase = { kind: 'malformed' } & (
  | {
      attack: 'npy-zero-itemsize';
      carrier: Carrier;
      descr: '<U0' | '>U0' | '<f0' | '<i0';
      rows: number;
      dataBytes: number;
    }
  | { attack: 'npy-huge-shape'; carrier: Carrier; descr: '<f4' | '<U1' | '|b1'; shape: string; dataBytes: number }
  | { attack: 'npy-code-point'; carrier: Carrier; points: number[]; bigEndian: boolean }
  | { attack: 'npy-long-string'; carrier: Carrier; width: number }
  | { attack: 'npy-broken'; carrier: Carrier; variant: number }
  | { attack: 'json-deep'; carrier: Carrier | 'v2'; shape: JsonShape; depth: number; open: '[' | '{"a":' }
  | {
      attack: 'json-proto-name';
      carrier: Carrier;
      where: 'named-input' | 'named-extra' | 'v2-input' | 'v2-datatype';
      name: ProtoName;
    }
  | { attack: 'oip-proto-name'; carrier: OipCarrier; where: 'output' | 'input' | 'datatype'; name: ProtoName }
  | {
      attack: 'oversized';
      carrier: Carrier;
      where: 'csv-0x01' | 'json-element' | 'json-input-name' | 'v2-datatype' | 'npy-header';
      bytes: number;
    }
  | { attack: 'oip-oversized'; carrier: OipCarrier; where: 'name' | 'datatype' | 'output'; bytes: number }
  | { attack: 'lying-content-type'; carrier: Carrier; actual: BodyCodec; declared: string }
  | {
      attack: 'lying-header-length';
      carrier: 'v2' | 'invoke-oip';
      how: 'header' | 'content-type';
      declared: string;
      binary: boolean;
    }
  | {
      attack: 'lying-binary-size';
      carrier: 'v2' | 'invoke-oip';
      size: 'minus4' | 'plus4' | 'zero' | 'negative' | 'fraction' | 'string' | 'huge' | 'null' | 'bool';
    }
  | { attack: 'lying-shape'; carrier: OipCarrier | 'invoke-json'; shape: Array<number | string> }
  | { attack: 'bytes-empty'; carrier: OipCarrier; count: number; rows16: boolean }
  | { attack: 'duplicate-input'; carrier: OipCarrier | 'invoke-json'; second: 'same' | 'other-shape' }
  | {
      attack: 'bad-values';
      carrier: Carrier;
      codec: JsonShape | 'csv';
      variant: 'string' | 'null' | 'bool' | 'object' | 'ragged' | 'columns4' | 'rank3' | 'empty' | 'word' | 'wide';
    }
  | { attack: 'json-syntax'; carrier: Carrier; body: string }
  | { attack: 'kserve-contents'; variant: 'raw-count' | 'typed-field' | 'typed-count' | 'raw-for-no-input' }
  | { attack: 'torchserve-no-body'; keys: string[] }
  | {
      /** A field of a wire type no proto3 message has (groups 3 and 4; 6 and 7 are none at all), raw bytes past the client's encoder. */
      attack: 'wire-type';
      carrier: 'kserve' | 'torchserve';
      wire: 3 | 4 | 6 | 7;
      field: number;
      where: 'start' | 'end' | 'nested';
      /** After it, 1 000 000 empty bytes_contents (KServe): what a walk that stopped at it would let through. */
      then: 'nothing' | 'bytes-empty';
    }
);

export type BoundaryCase = ValidCase | MalformedCase;

export interface Round {
  cases: BoundaryCase[];
}
