/** The frame codec both processes share: fuzzed round trips, body sizes from 0 B to 64 MiB, no copies, limits. */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { FrameReader, FrameTooLargeError, MessageKind, encodeFrame, type Frame } from '../../src/protocol/frames';

/** Feeds `bytes` to a reader in pieces cut at `cuts`, as a socket would deliver them. */
function readBack(bytes: Buffer, cuts: number[] = [], limit = 2 ** 31 - 1): Frame[] {
  const frames: Frame[] = [];
  const reader = new FrameReader(limit, (f) => frames.push(f));
  let at = 0;
  for (const c of [...new Set(cuts.map((x) => x % (bytes.length + 1)))].sort((a, b) => a - b)) {
    reader.push(bytes.subarray(at, c));
    at = c;
  }
  reader.push(bytes.subarray(at));
  return frames;
}

const text = fc.string({ unit: 'binary', maxLength: 40 });
const body = fc.uint8Array({ maxLength: 300 }).map((a) => Buffer.from(a));
const headers = fc.dictionary(fc.string({ minLength: 1, maxLength: 12 }), text, { maxKeys: 5 });
const u32 = fc.integer({ min: 0, max: 2 ** 32 - 1 });

const infer = fc.record({
  batchId: u32,
  slot: u32,
  independent: fc.boolean(),
  withHeaders: fc.boolean(),
  requests: fc.array(fc.record({ id: u32, requestId: text, contentType: text, accept: text, headers, body, stream: fc.boolean() }), { maxLength: 8 }),
}).map((m): Frame => ({ kind: MessageKind.Infer, msg: m }));
const result = fc.record({
  batchId: u32,
  modelMicros: fc.nat(),
  responses: fc.array(fc.record({
    id: u32, status: fc.integer({ min: 100, max: 599 }), contentType: text, headers, body,
    error: fc.option(fc.record({ code: text, status: fc.integer({ min: 400, max: 599 }), message: text }), { nil: undefined }),
  }, { requiredKeys: ['id', 'status', 'contentType', 'headers', 'body'] }), { maxLength: 8 }),
}).map((m): Frame => ({ kind: MessageKind.Result, msg: m }));
const chunk = fc.record({ slot: u32, id: u32, head: fc.option(fc.record({ status: fc.integer({ min: 100, max: 599 }), contentType: text, headers }), { nil: undefined }), body }, { requiredKeys: ['slot', 'id', 'body'] })
  .map((m): Frame => ({ kind: MessageKind.Chunk, msg: m }));
const small = fc.oneof(
  u32.map((id): Frame => ({ kind: MessageKind.Cancel, msg: { id } })),
  fc.record({ id: u32, bytes: u32 }).map((m): Frame => ({ kind: MessageKind.ChunkAck, msg: m })),
  fc.record({ pid: fc.nat(), sessionBytes: fc.nat() }).map((m): Frame => ({ kind: MessageKind.Started, msg: m })),
);

/** What the decoder gives back for `f`: flags only when set, headers only when sent. */
function expected(f: Frame): Frame {
  if (f.kind !== MessageKind.Infer) return f;
  const { independent, withHeaders, ...rest } = f.msg;
  return {
    kind: f.kind,
    msg: {
      ...rest,
      ...(independent ? { independent } : {}),
      ...(withHeaders ? { withHeaders } : {}),
      requests: f.msg.requests.map(({ headers: h, stream, ...r }) => ({ ...r, ...(stream ? { stream } : {}), ...(withHeaders ? { headers: h } : {}) })),
    },
  };
}

describe('frames (the parent ⇄ worker protocol)', () => {
  it('round-trips every message kind, however the stream is cut', () => {
    fc.assert(fc.property(fc.array(fc.oneof(infer, result, chunk, small), { minLength: 1, maxLength: 6 }), fc.array(fc.nat(), { maxLength: 20 }), (frames, cuts) => {
      const bytes = Buffer.concat(frames.flatMap((f) => encodeFrame(f)));
      const back = readBack(bytes, cuts);
      assert.equal(back.length, frames.length);
      back.forEach((b, i) => assert.deepEqual(JSON.parse(JSON.stringify(b)), JSON.parse(JSON.stringify(expected(frames[i])))));
    }), { numRuns: 300 });
  });

  for (const size of [0, 1, 65_536, 2 ** 20, 64 * 2 ** 20]) {
    it(`carries a body of ${size} bytes exactly, written as the caller's own buffer (no copy)`, () => {
      const b = Buffer.allocUnsafe(size);
      for (let i = 0; i < size; i += 4096) b[i] = i & 0xff;
      if (size > 0) b[size - 1] = 7;
      const parts = encodeFrame({ kind: MessageKind.Chunk, msg: { slot: 0, id: 3, body: b } });
      if (size > 0) assert.equal(parts[1], b);
      const [f] = readBack(Buffer.concat(parts), [5, 13, Math.floor(size / 2)]);
      assert.equal(f.kind, MessageKind.Chunk);
      assert.ok((f.msg as { body: Buffer }).body.equals(b));
    });
  }

  it('keeps a header named __proto__ as a header (fast-check found it)', () => {
    const headers = JSON.parse('{"__proto__": "x", "a": "b"}') as Record<string, string>;
    const [f] = readBack(Buffer.concat(encodeFrame({ kind: MessageKind.Chunk, msg: { slot: 0, id: 1, head: { status: 200, contentType: '', headers }, body: Buffer.alloc(0) } })));
    const back = (f.msg as { head: { headers: Record<string, string> } }).head.headers;
    assert.deepEqual(Object.keys(back), ['__proto__', 'a']);
    assert.equal(Object.getPrototypeOf(back), Object.prototype);
  });

  it('refuses a frame over the limit before buffering it, and a truncated header', () => {
    const [head, bodyPart] = encodeFrame({ kind: MessageKind.Chunk, msg: { slot: 0, id: 1, body: Buffer.alloc(1000) } });
    assert.throws(() => readBack(Buffer.concat([head, bodyPart]), [], 500), FrameTooLargeError);
    const lying = Buffer.from(head);
    lying.writeUInt32BE(lying.length - 4, 0); // claims no payload: the body length now points past the end
    assert.throws(() => readBack(lying), RangeError);
  });
});
