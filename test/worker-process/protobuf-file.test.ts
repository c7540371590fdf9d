/**
 * src/worker-process/protobuf-file.ts: a model file's protobuf read through a 64 KiB window:
 * the last of a repeated field wins (as protobuf merges), fields past the window and bigger than
 * it read whole, and anything malformed is an Error naming its byte.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fields, lastField, lastText, lastVarint, withFile } from '../../src/worker-process/protobuf-file';
import { tempDir } from '../../harness/test-server';
import { field, text, varint } from '../helpers/protobuf-wire';

/** A file holding `bytes`; read through withFile as one message spanning it. */
function readAll<T>(
  bytes: Buffer,
  read: (f: Parameters<Parameters<typeof withFile>[1]>[0], whole: { start: number; payload: number; end: number }) => T,
): T {
  const file = path.join(tempDir('mme-pb-file-'), 'm.onnx');
  fs.writeFileSync(file, bytes);
  return withFile(file, (f) => read(f, { start: 0, payload: 0, end: f.size }));
}

const varintField = (n: number, value: number) => Buffer.concat([varint(n * 8), varint(value)]);

describe('worker-process/protobuf-file: an ONNX file read through a window', () => {
  it('answers the last text and varint of a field number, and protobuf defaults when absent', () => {
    const bytes = Buffer.concat([
      text(2, 'first'),
      varintField(1, 7),
      text(2, 'last'),
      varintField(1, 300),
      text(9, 'x'),
    ]);
    readAll(bytes, (f, whole) => {
      assert.equal(lastText(f, whole, 2), 'last');
      assert.equal(lastVarint(f, whole, 1), 300);
      assert.equal(lastText(f, whole, 4), '');
      assert.equal(lastVarint(f, whole, 4), 0);
      // A varint field is not a text field of the same number.
      assert.equal(lastField(f, whole, 1), null);
    });
  });

  it('reads a field larger than the window whole, and the field after it', () => {
    const big = Buffer.alloc(100_000, 0xab);
    const bytes = Buffer.concat([text(1, 'head'), field(3, big), text(4, 'tail')]);
    readAll(bytes, (f, whole) => {
      assert.deepEqual(f.bytes(lastField(f, whole, 3)!), big);
      assert.equal(lastText(f, whole, 4), 'tail');
      assert.equal(lastText(f, whole, 1), 'head');
    });
  });

  it('refuses a group, an unknown wire type, field number 0 and a field running past its message, naming the byte', () => {
    const head = text(1, 'ok');
    const at = head.length;
    const cases: Array<[Buffer, RegExp]> = [
      [Buffer.concat([head, varint(5 * 8 + 3)]), new RegExp(`unexpected protobuf wire type 3 at byte ${at}$`)],
      [Buffer.concat([head, varint(5 * 8 + 7)]), new RegExp(`unexpected protobuf wire type 7 at byte ${at}$`)],
      [Buffer.concat([head, varintField(0, 1)]), new RegExp(`a protobuf field at byte ${at} has number 0$`)],
      [
        Buffer.concat([head, varint(5 * 8 + 2), varint(50), Buffer.from('short')]),
        new RegExp(`a protobuf field at byte ${at} runs past its message$`),
      ],
    ];
    for (const [bytes, message] of cases)
      readAll(bytes, (f, whole) => assert.throws(() => [...fields(f, whole.payload, whole.end)], message));
  });

  it('refuses a message that claims more bytes than the file has', () => {
    const bytes = text(1, 'ok');
    readAll(bytes, (f) =>
      assert.throws(
        () => [...fields(f, 0, bytes.length + 10)],
        new RegExp(`the file ends inside a protobuf field at byte ${bytes.length}$`),
      ),
    );
  });
});
