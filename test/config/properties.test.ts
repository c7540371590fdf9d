import assert from 'node:assert/strict';
import { isMmeError } from '../../src/errors';
import { parseProperties } from '../../src/config/properties';

const parse = (text: string): Record<string, string> => Object.fromEntries(parseProperties(text));

describe('parseProperties (java.util.Properties semantics)', () => {
  describe('separators', () => {
    it('accepts "=", ":" and whitespace between key and value', () => {
      assert.deepEqual(parse('a=1\nb:2\nc 3\nd\t4\ne\f5'), { a: '1', b: '2', c: '3', d: '4', e: '5' });
    });

    it('skips whitespace around the separator but keeps trailing whitespace in the value', () => {
      assert.deepEqual(parse('a  =  1  \nb :\t2'), { a: '1  ', b: '2' });
    });

    it('after a whitespace separator skips exactly one "=" or ":"', () => {
      assert.deepEqual(parse('a = = 1\nb : : 2\nc == 3'), { a: '= 1', b: ': 2', c: '= 3' });
    });

    it('keeps later "=" and ":" in the value', () => {
      assert.deepEqual(parse('url=http://0.0.0.0:8080/?x=y'), { url: 'http://0.0.0.0:8080/?x=y' });
    });

    it('gives a key with no separator an empty value', () => {
      assert.deepEqual(parse('lonely\nalso=\nspaced   '), { lonely: '', also: '', spaced: '' });
    });

    it('lets escaped separators and spaces be part of the key', () => {
      assert.deepEqual(parse('a\\=b=1\nc\\:d:2\ne\\ f 3'), { 'a=b': '1', 'c:d': '2', 'e f': '3' });
    });
  });

  describe('comments and blank lines', () => {
    it('ignores lines whose first non-blank character is # or !', () => {
      assert.deepEqual(parse('# comment\n  ! another\n\n   \na=1 # not a comment'), { a: '1 # not a comment' });
    });

    it('does not continue a comment that ends with a backslash', () => {
      assert.deepEqual(parse('# comment \\\na=1'), { a: '1' });
    });
  });

  describe('line continuation', () => {
    it('joins a line ending in a backslash with the next, dropping its leading whitespace', () => {
      assert.deepEqual(parse('list=a,\\\n    b,\\\n\tc'), { list: 'a,b,c' });
    });

    it('treats an even number of trailing backslashes as escaped backslashes, not a continuation', () => {
      assert.deepEqual(parse('path=C:\\\\dir\\\\\nnext=1'), { path: 'C:\\dir\\', next: '1' });
    });

    it('does not treat a continued line starting with # as a comment', () => {
      assert.deepEqual(parse('a=x\\\n  #y'), { a: 'x#y' });
    });

    it('ends the logical line at an empty continued line', () => {
      assert.deepEqual(parse('a=x\\\n\nb=2'), { a: 'x', b: '2' });
    });

    it('drops a backslash on the last line of the file', () => {
      assert.deepEqual(parse('a=x\\'), { a: 'x' });
    });

    it('continues the key too', () => {
      assert.deepEqual(parse('inference_\\\n  address=x'), { inference_address: 'x' });
    });
  });

  describe('escapes', () => {
    it('decodes \\t \\n \\r \\f and \\uXXXX', () => {
      assert.deepEqual(parse('a=x\\ty\\nz\\r\\f\nb=caf\\u00e9\nc\\u0041=1'), { a: 'x\ty\nz\r\f', b: 'café', cA: '1' });
    });

    it('drops the backslash before any other character', () => {
      assert.deepEqual(parse('a=\\q\\#\\!\\=\\:\\ x'), { a: 'q#!=: x' });
    });

    it('keeps leading value whitespace when it is escaped', () => {
      assert.deepEqual(parse('a=\\  x'), { a: '  x' });
    });

    it('rejects a malformed \\u escape, naming the source and line', () => {
      assert.throws(
        () => parseProperties('ok=1\nbad=\\u12G4', '/etc/x.properties'),
        (err: unknown) => {
          assert.ok(isMmeError(err));
          assert.equal(err.code, 'MME_ERR_CONFIG');
          assert.match(err.message, /\/etc\/x\.properties line 2: malformed \\uXXXX escape "\\u12G4"/);
          return true;
        },
      );
    });
  });

  describe('lines and duplicates', () => {
    it('accepts \\n, \\r\\n and \\r line endings', () => {
      assert.deepEqual(parse('a=1\r\nb=2\rc=3\n'), { a: '1', b: '2', c: '3' });
    });

    it('lets the last occurrence of a key win', () => {
      assert.deepEqual(parse('a=1\na=2'), { a: '2' });
    });

    it('ignores a UTF-8 byte order mark', () => {
      assert.deepEqual(parse('\uFEFFa=1'), { a: '1' });
    });

    it('returns an empty map for empty text', () => {
      assert.equal(parseProperties('').size, 0);
    });
  });
});
