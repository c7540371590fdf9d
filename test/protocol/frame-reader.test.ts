/**
 * The frame reader both processes share, over the codec's bytes: fuzzed round trips fed as chunks and
 * as reads into the reader's own memory, body sizes from 0 B to 64 MiB, no copies, aligned bodies, limits.
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { FrameTooLargeError, encodeFrame } from '../../src/protocol/frame-codec';
import { FrameReader } from '../../src/protocol/frame-reader';
import { MessageKind, type Frame } from '../../src/protocol/messages';
import { BODY_ALIGN } from '../../src/protocol/binary';
import { MAX_WIRE_ID } from '../../src/protocol/ids';

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

/**
 * Feeds `bytes` the way the worker's channel does (net.Socket `onread`): each read lands in the
 * buffer the reader hands out, at most `sizes[i]` bytes of it.
 */
function readInto(bytes: Buffer, sizes: number[], limit = 2 ** 31 - 1): Frame[] {
  const frames: Frame[] = [];
  const reader = new FrameReader(limit, (f) => frames.push(f));
  for (let at = 0, i = 0; at < bytes.length; i++) {
    const target = reader.readTarget();
    const n = Math.min(
      target.length,
      bytes.length - at,
      1 + (sizes.length > 0 ? sizes[i % sizes.length] : target.length),
    );
    bytes.copy(target, 0, at, at + n);
    reader.wrote(n, target);
    at += n;
  }
  return frames;
}

/** Every body of a decoded frame. */
function bodiesOf(f: Frame): Buffer[] {
  if (f.kind === MessageKind.Infer) return f.msg.requests.map((r) => r.body as Buffer);
  if (f.kind === MessageKind.Result) return f.msg.responses.map((r) => r.body!);
  return f.kind === MessageKind.Chunk ? [f.msg.body!] : [];
}

const text = fc.string({ unit: 'binary', maxLength: 40 });
const body = fc.uint8Array({ maxLength: 300 }).map((a) => Buffer.from(a));
const headers = fc.dictionary(fc.string({ minLength: 1, maxLength: 12 }), text, { maxKeys: 5 });
const u32 = fc.integer({ min: 0, max: 2 ** 32 - 1 });
/** Job and batch ids: any safe integer, the u32 boundary and the wrap point among them. */
const wireId = fc.oneof(u32, fc.constantFrom(2 ** 32 - 1, 2 ** 32, 2 ** 32 + 1, MAX_WIRE_ID), fc.maxSafeNat());

const infer = fc
  .record({
    batchId: wireId,
    slot: u32,
    independent: fc.boolean(),
    withHeaders: fc.boolean(),
    requests: fc.array(
      fc.record({ id: wireId, requestId: text, contentType: text, accept: text, headers, body, stream: fc.boolean() }),
      { maxLength: 8 },
    ),
  })
  .map((m): Frame => ({ kind: MessageKind.Infer, msg: m }));
const result = fc
  .record({
    batchId: wireId,
    modelMicros: fc.nat(),
    runMicros: fc.nat(),
    responses: fc.array(
      fc.record(
        {
          id: wireId,
          status: fc.integer({ min: 100, max: 599 }),
          contentType: text,
          headers,
          body,
          error: fc.option(fc.record({ code: text, status: fc.integer({ min: 400, max: 599 }), message: text }), {
            nil: undefined,
          }),
        },
        { requiredKeys: ['id', 'status', 'contentType', 'headers', 'body'] },
      ),
      { maxLength: 8 },
    ),
  })
  .map((m): Frame => ({ kind: MessageKind.Result, msg: m }));
const chunk = fc
  .record(
    {
      slot: u32,
      id: wireId,
      head: fc.option(fc.record({ status: fc.integer({ min: 100, max: 599 }), contentType: text, headers }), {
        nil: undefined,
      }),
      body,
    },
    { requiredKeys: ['slot', 'id', 'body'] },
  )
  .map((m): Frame => ({ kind: MessageKind.Chunk, msg: m }));
const small = fc.oneof(
  wireId.map((id): Frame => ({ kind: MessageKind.Cancel, msg: { id } })),
  fc.record({ id: wireId, bytes: u32 }).map((m): Frame => ({ kind: MessageKind.ChunkAck, msg: m })),
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
      requests: f.msg.requests.map(({ headers: h, stream, ...r }) => ({
        ...r,
        ...(stream ? { stream } : {}),
        ...(withHeaders ? { headers: h } : {}),
      })),
    },
  };
}

describe('frame reader (the parent ⇄ worker protocol)', () => {
  it('round-trips every message kind, however the stream is cut', () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(infer, result, chunk, small), { minLength: 1, maxLength: 6 }),
        fc.array(fc.nat(), { maxLength: 20 }),
        (frames, cuts) => {
          const bytes = Buffer.concat(frames.flatMap((f) => encodeFrame(f)));
          const back = readBack(bytes, cuts);
          assert.equal(back.length, frames.length);
          back.forEach((b, i) =>
            assert.deepEqual(JSON.parse(JSON.stringify(b)), JSON.parse(JSON.stringify(expected(frames[i])))),
          );
        },
      ),
      { numRuns: 300 },
    );
  });

  it('round-trips every message kind read straight into its memory, however the reads are cut; earlier frames survive the reuse; bodies start 8-byte aligned', () => {
    const readSize = fc.oneof(fc.nat({ max: 16 }), fc.nat({ max: 70_000 }));
    fc.assert(
      fc.property(
        fc.array(fc.oneof(infer, result, chunk, small), { minLength: 1, maxLength: 6 }),
        fc.array(readSize, { maxLength: 20 }),
        (frames, sizes) => {
          const bytes = Buffer.concat(frames.flatMap((f) => encodeFrame(f)));
          // Decoded frames are compared only after the last read, which reused the reader's buffer.
          const back = readInto(bytes, sizes);
          assert.equal(back.length, frames.length);
          back.forEach((b, i) =>
            assert.deepEqual(JSON.parse(JSON.stringify(b)), JSON.parse(JSON.stringify(expected(frames[i])))),
          );
          // So typed data in a body (a .npy image's float32s) can be viewed in place.
          for (const f of back)
            for (const b of bodiesOf(f)) if (b.length > 0) assert.equal(b.byteOffset % BODY_ALIGN, 0);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('decodes a frame that arrives whole in a chunk in place, and one cut across chunks with one copy into its own buffer', () => {
    const body = Buffer.alloc(5000, 3);
    const bytes = Buffer.concat(encodeFrame({ kind: MessageKind.Chunk, msg: { slot: 0, id: 1, body } }));
    const [whole] = readBack(bytes);
    assert.equal(bodiesOf(whole)[0].buffer, bytes.buffer);
    const [cut] = readBack(bytes, [2, 3000]);
    assert.notEqual(bodiesOf(cut)[0].buffer, bytes.buffer);
    assert.ok(bodiesOf(cut)[0].equals(body));
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
      const [g] = readInto(Buffer.concat(parts), [3, 100_000, 7]);
      assert.ok((g.msg as { body: Buffer }).body.equals(b));
    });
  }

  it('refuses a frame over the limit before buffering it, and a truncated header', () => {
    const [head, bodyPart] = encodeFrame({
      kind: MessageKind.Chunk,
      msg: { slot: 0, id: 1, body: Buffer.alloc(1000) },
    });
    assert.throws(() => readBack(Buffer.concat([head, bodyPart]), [], 500), FrameTooLargeError);
    assert.throws(() => readInto(Buffer.concat([head, bodyPart]), [1], 500), FrameTooLargeError);
    const lying = Buffer.from(head);
    lying.writeUInt32BE(lying.length - 4, 0); // claims no payload: the body length now points past the end
    assert.throws(() => readBack(lying), RangeError);
  });
});
