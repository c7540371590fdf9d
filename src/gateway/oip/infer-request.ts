/** A v2 inference's controls read from its JSON header. */

const kTimeoutKey = Buffer.from('"timeout"');
const kPriorityKey = Buffer.from('"priority"');

/** The pieces of `body` that hold its first `length` bytes, the last one cut to fit: no copy. */
function headerChunks(body: readonly Buffer[], length: number): Buffer[] {
  const out: Buffer[] = [];
  for (let i = 0, n = 0; i < body.length && n < length; i++) {
    const b = body[i];
    out.push(b.length <= length - n ? b : b.subarray(0, length - n));
    n += b.length;
  }
  return out;
}

/** `key` in the bytes `chunks` hold back to back, across seams too, however small the chunks. */
function mentions(chunks: readonly Buffer[], key: Buffer): boolean {
  const keep = key.length - 1;
  // The last `keep` bytes before this chunk, which a key may start in.
  let tail: Buffer = Buffer.alloc(0);
  for (const c of chunks) {
    if (c.indexOf(key) >= 0) return true;
    if (tail.length > 0 && Buffer.concat([tail, c.subarray(0, keep)]).indexOf(key) >= 0) return true;
    tail = c.length >= keep ? c.subarray(c.length - keep) : Buffer.concat([tail, c]).subarray(-keep);
  }
  return false;
}

/** The JSON header is parsed only when it names either key; one that does not parse is the worker's to refuse. */
export function oipControls(body: readonly Buffer[], headerLength: number): { timeout?: unknown; priority?: unknown } {
  const chunks = body.length === 1 ? [body[0].subarray(0, headerLength)] : headerChunks(body, headerLength);
  if (!mentions(chunks, kTimeoutKey) && !mentions(chunks, kPriorityKey)) return {};
  const header = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
  let parameters: unknown;
  try {
    parameters = (JSON.parse(header.toString('utf8')) as { parameters?: unknown })?.parameters;
  } catch {
    return {};
  }
  if (typeof parameters !== 'object' || parameters === null) return {};
  const p = parameters as Record<string, unknown>;
  return {
    timeout: Object.hasOwn(p, 'timeout') ? p.timeout : undefined,
    priority: Object.hasOwn(p, 'priority') ? p.priority : undefined,
  };
}
