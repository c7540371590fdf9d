/**
 * Content-Type and Accept headers, reduced to what picking a codec needs (RFC 9110 §12.5.1):
 * media types compare without their parameters, and Accept ranges are weighed by q.
 */

/** "Text/CSV; charset=utf-8" → "text/csv". */
export function essence(header: string): string {
  return header.split(';')[0].trim().toLowerCase();
}

/** application/json, and structured-syntax JSON types such as application/vnd.foo+json. */
export function isJson(type: string): boolean {
  return /^application\/(?:[\w.+-]+\+)?json$/.test(type);
}

interface MediaRange {
  type: string;
  q: number;
  /** Parameters other than q, names lower-cased. */
  params: Record<string, string>;
}

function parseAccept(header: string): MediaRange[] {
  const ranges: MediaRange[] = [];
  for (const part of header.split(',')) {
    const [type, ...pairs] = part.split(';').map((s) => s.trim());
    if (!type) continue;
    const params: Record<string, string> = {};
    for (const pair of pairs) {
      const eq = pair.indexOf('=');
      if (eq > 0)
        params[pair.slice(0, eq).trim().toLowerCase()] = pair
          .slice(eq + 1)
          .trim()
          .replace(/^"(.*)"$/, '$1');
    }
    const q = params.q === undefined ? 1 : Number(params.q);
    ranges.push({ type: type.toLowerCase(), q: Number.isFinite(q) ? q : 0, params });
  }
  return ranges;
}

function matches(range: string, type: string): boolean {
  if (range === '*/*' || range === type) return true;
  return range.endsWith('/*') && type.startsWith(range.slice(0, -1));
}

/** Specific ranges outrank wildcards when weighing one type: text/csv;q=0 excludes csv even if any type is welcome. */
function specificity(range: string): number {
  return range === '*/*' ? 0 : range.endsWith('/*') ? 1 : 2;
}

/** The offered type Accept prefers (highest q, then offer order); an empty header takes the first; null: 406. */
export function negotiate(accept: string, offered: readonly string[]): string | null {
  const ranges = parseAccept(accept);
  if (ranges.length === 0) return offered[0] ?? null;
  let best: string | null = null;
  let bestQ = 0;
  for (const type of offered) {
    const applicable = ranges.filter((r) => matches(r.type, type));
    if (applicable.length === 0) continue;
    const top = Math.max(...applicable.map((r) => specificity(r.type)));
    const q = Math.max(...applicable.filter((r) => specificity(r.type) === top).map((r) => r.q));
    if (q > bestQ) {
      best = type;
      bestQ = q;
    }
  }
  return best;
}

/** Parameter `name` of the most preferred Accept range naming exactly `type` (text/csv;output=label → "label"). */
export function acceptParameter(accept: string, type: string, name: string): string | undefined {
  const ranges = parseAccept(accept)
    .filter((r) => r.type === type && r.q > 0)
    .sort((a, b) => b.q - a.q);
  return ranges[0]?.params[name];
}
