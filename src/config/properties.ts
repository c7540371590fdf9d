/**
 * A `.properties` parser with java.util.Properties#load semantics, because MMS reads
 * config.properties with that class and existing MMS/SageMaker files must mean the same thing here.
 *
 * One deliberate difference: the text is taken as already-decoded Unicode (like load(Reader)), not
 * ISO-8859-1 bytes (load(InputStream)); \uXXXX escapes work either way.
 */
import { configError } from '../errors';

/** Java's Properties whitespace: space, tab, form feed (not other Unicode spaces). */
const kWhitespace = new Set([' ', '\t', '\f']);
const kLeadingWhitespace = /^[ \t\f]+/;

export function parseProperties(text: string, sourceName = 'properties text'): Map<string, string> {
  const result = new Map<string, string>();
  const add = (logical: string, line: number): void => {
    const [rawKey, rawValue] = splitKeyValue(logical);
    const where = `${sourceName} line ${line}`;
    result.set(unescape(rawKey, where), unescape(rawValue, where));
  };
  // A UTF-8 BOM would otherwise become part of the first key, which then silently never matches.
  const lines = text.replace(/^\uFEFF/, '').split(/\r\n|\r|\n/);
  let logical = '';
  let startLine = 0;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].replace(kLeadingWhitespace, '');
    // As in Java (9+), blank and comment lines are recognised whenever the logical line is still
    // empty, even right after a continuation; a comment's trailing backslash never continues it.
    if (logical === '') {
      if (line === '' || line[0] === '#' || line[0] === '!') continue;
      startLine = i + 1;
    }
    logical += line;
    if (endsWithContinuation(logical)) {
      logical = logical.slice(0, -1);
      continue;
    }
    add(logical, startLine);
    logical = '';
  }
  // A backslash on the last line continues into nothing.
  if (logical !== '') add(logical, startLine);
  return result;
}

/** An odd number of trailing backslashes: the last one escapes the line terminator. */
function endsWithContinuation(line: string): boolean {
  let count = 0;
  for (let i = line.length - 1; i >= 0 && line[i] === '\\'; i--) count++;
  return count % 2 === 1;
}

/**
 * The key ends at the first unescaped '=', ':' or whitespace. After it, whitespace and at most one
 * '=' or ':' are skipped, then whitespace again; the value keeps any trailing whitespace, as in Java.
 */
function splitKeyValue(line: string): [string, string] {
  let keyEnd = 0;
  let escaped = false;
  let hasSeparator = false;
  for (; keyEnd < line.length; keyEnd++) {
    const c = line[keyEnd];
    if (!escaped && (c === '=' || c === ':')) {
      hasSeparator = true;
      break;
    }
    if (!escaped && kWhitespace.has(c)) break;
    escaped = c === '\\' ? !escaped : false;
  }
  let valueStart = keyEnd + 1;
  for (; valueStart < line.length; valueStart++) {
    const c = line[valueStart];
    if (kWhitespace.has(c)) continue;
    if (!hasSeparator && (c === '=' || c === ':')) {
      hasSeparator = true;
      continue;
    }
    break;
  }
  return [line.slice(0, keyEnd), line.slice(valueStart)];
}

const kEscapes: Readonly<Record<string, string>> = { t: '\t', n: '\n', r: '\r', f: '\f' };

/** Java's loadConvert: \t \n \r \f \uXXXX; any other escaped character stands for itself. */
function unescape(s: string, where: string): string {
  if (!s.includes('\\')) return s;
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c !== '\\' || i + 1 >= s.length) {
      out += c;
      continue;
    }
    const next = s[++i];
    if (next === 'u') {
      const hex = s.slice(i + 1, i + 5);
      if (!/^[0-9A-Fa-f]{4}$/.test(hex)) {
        throw configError(`${where}: malformed \\uXXXX escape "\\u${hex}" (expected four hex digits, e.g. \\u00e9)`);
      }
      out += String.fromCharCode(parseInt(hex, 16));
      i += 4;
    } else {
      out += kEscapes[next] ?? next;
    }
  }
  return out;
}
