/**
 * The frame codec both processes share: headers that JSON would mangle, ids past 2^32 and the limits
 * on what a frame can say. Round trips through a stream are frame-reader.test.ts's.
 */
import assert from 'node:assert/strict';
import { FrameTooLargeError, decodeFrame, encodeFrame } from '../../src/protocol/frame-codec';
import { MessageKind, type Frame } from '../../src/protocol/messages';
import { MAX_U32, MAX_WIRE_ID } from '../../src/protocol/ids';

/** Decodes the frame that `parts` (encodeFrame's buffers) make up. */
function decode(parts: Buffer[]): Frame {
  return decodeFrame(Buffer.concat(parts));
}

describe('frame codec (the parent ⇄ worker protocol)', () => {
  it('keeps a header named __proto__ as a header (fast-check found it)', () => {
    const headers = JSON.parse('{"__proto__": "x", "a": "b"}') as Record<string, string>;
    const f = decode(
      encodeFrame({
        kind: MessageKind.Chunk,
        msg: { slot: 0, id: 1, head: { status: 200, contentType: '', headers }, body: Buffer.alloc(0) },
      }),
    );
    const back = (f.msg as { head: { headers: Record<string, string> } }).head.headers;
    assert.deepEqual(Object.keys(back), ['__proto__', 'a']);
    assert.equal(Object.getPrototypeOf(back), Object.prototype);
  });

  describe('after 2^32 requests every invoke fails, then the server exits (issue 21): ids are 64-bit on the wire', () => {
    /** One frame of each kind that carries a job or batch id, with `id` in every such field. */
    const withId = (id: number, slot = 1): Frame[] => {
      const body = Buffer.from('x');
      return [
        {
          kind: MessageKind.Infer,
          msg: {
            batchId: id,
            slot,
            requests: [{ id, requestId: 'r', contentType: 'application/json', accept: '', body }],
          },
        },
        {
          kind: MessageKind.Result,
          msg: {
            batchId: id,
            modelMicros: 5,
            runMicros: 3,
            responses: [{ id, status: 200, contentType: 'text/plain', headers: {}, body }],
          },
        },
        { kind: MessageKind.Chunk, msg: { slot, id, body } },
        { kind: MessageKind.Cancel, msg: { id } },
        { kind: MessageKind.ChunkAck, msg: { id, bytes: 7 } },
      ];
    };

    for (const id of [2 ** 32 - 1, 2 ** 32, 2 ** 32 + 1, MAX_WIRE_ID]) {
      it(`carries job and batch id ${id} through Infer, Result, Chunk, Cancel and ChunkAck`, () => {
        const frames = withId(id);
        const back = frames.map((f) => decode(encodeFrame(f)));
        assert.deepEqual(JSON.parse(JSON.stringify(back)), JSON.parse(JSON.stringify(frames)));
      });
    }

    it('carries slot 2^32 − 1 and refuses to write slot 2^32 (slots are u32: a host wraps them)', () => {
      const [infer, , chunk] = withId(1, MAX_U32);
      assert.equal((decode(encodeFrame(infer)).msg as { slot: number }).slot, MAX_U32);
      assert.equal((decode(encodeFrame(chunk)).msg as { slot: number }).slot, MAX_U32);
      for (const f of withId(1, MAX_U32 + 1).filter(
        (x) => x.kind === MessageKind.Infer || x.kind === MessageKind.Chunk,
      )) {
        assert.throws(() => encodeFrame(f), RangeError);
      }
    });

    it('refuses to write an id past 2^53 − 1, negative or fractional, and to read one past 2^53 − 1', () => {
      for (const id of [MAX_WIRE_ID + 1, -1, 1.5])
        for (const f of withId(id)) assert.throws(() => encodeFrame(f), /an id must be an integer/);
      const [cancel] = encodeFrame({ kind: MessageKind.Cancel, msg: { id: MAX_WIRE_ID } });
      const past = Buffer.from(cancel);
      past.writeUInt32BE(0x20_0000, 9); // the high word of 2^53
      assert.throws(() => decodeFrame(past), /past 2\^53/);
    });

    it('refuses to write a frame longer than a u32 can say, however its bodies are split', () => {
      // Two requests of 2 GiB + 1 MiB each, made of one 1 MiB buffer: each length fits a u32, the frame does not.
      const piece = Buffer.alloc(2 ** 20);
      const pieces = Array.from({ length: 2 ** 11 + 1 }, () => piece);
      const request = (id: number) => ({ id, requestId: 'r', contentType: '', accept: '', body: pieces });
      assert.throws(
        () => encodeFrame({ kind: MessageKind.Infer, msg: { batchId: 1, requests: [request(1), request(2)] } }),
        FrameTooLargeError,
      );
    });
  });
});
