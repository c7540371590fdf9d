/**
 * Every config.properties key this server understands, by section: the single source for validation
 * (values.ts reads each key through its kind and range), for ServerConfig's plain fields (types.ts's
 * PlainConfig) and for the config tables in docs/configuration.md (renderKeysMarkdown). Defaults are
 * written as they would be in the file, so they go through the same parser as user values.
 */
import { kAutoscaleKeys } from './autoscale';
import { kCacheKeys } from './cache';
import type { KeySpec, NamedKeySpec } from './kinds';
import { kListenerKeys } from './listeners';
import { kMetricsKeys } from './metrics';
import { kRepositoryKeys } from './repository';
import { kSecurityKeys } from './security';
import { kTracingKeys } from './tracing';
import { kWorkerKeys } from './workers';
import { nearestName } from '../../util/nearest-name';

export { MAX_BODY_BYTES, type KeyKind, type KeySpec, type NamedKeySpec, type Range } from './kinds';

/** The sections in the order docs/configuration.md shows them. */
const kSections = [
  ['Listeners and requests', kListenerKeys],
  ['Workers', kWorkerKeys],
  ['Models and the cache', kCacheKeys],
  ['Model repository', kRepositoryKeys],
  ['Autoscaling', kAutoscaleKeys],
  ['Metrics and logs', kMetricsKeys],
  ['Tracing', kTracingKeys],
  ['Security and the config file', kSecurityKeys],
] as const;

type Intersection<U> = (U extends unknown ? (u: U) => void : never) extends (i: infer I) => void ? I : never;
/** Every section's entries by key name, with their literal kinds and defaults (types.ts derives the config's types from it). */
export type KeyTable = Intersection<(typeof kSections)[number][1]>;
export type KeyName = Extract<keyof KeyTable, string>;

export const KEYS: readonly NamedKeySpec[] = kSections.flatMap(([, table]) =>
  Object.entries(table as Record<string, KeySpec>).map(([name, spec]) => ({ name, ...spec })),
);
const kByName: ReadonlyMap<string, NamedKeySpec> = new Map(KEYS.map((k) => [k.name, k]));

export function keySpec(name: string): NamedKeySpec | undefined {
  return kByName.get(name);
}

/** The field a plain key is read into, or null for a key a section's resolver reads. */
export function fieldOf(spec: NamedKeySpec): string | null {
  if (spec.field !== undefined) return spec.field;
  return spec.name.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
}

/** The known key nearest to `name` by edit distance, if it is close enough to be a typo of it. */
export function nearestKey(name: string): KeyName | null {
  return nearestName(name, kByName.keys() as Iterable<KeyName>);
}

/** The environment variable that overrides a key when enable_envvars_config=true (MMS naming). */
export function envOverrideName(key: string): string {
  return `MMS_${key.toUpperCase()}`;
}

/** docs/configuration.md's config tables, one per section (key | default | meaning). */
export function renderKeysMarkdown(): string {
  // Escaped so that MMS_<KEY> is not swallowed as an HTML tag and '|' does not split the cell.
  const escape = (doc: string) => doc.replace(/[<>|]/g, (c) => `\\${c}`);
  const row = ([name, k]: [string, KeySpec]) => {
    const values = k.values ? ` One of: ${k.values.join(', ')}.` : '';
    return `| \`${name}\` | ${k.default === null ? '(unset)' : `\`${k.default}\``} | ${escape(k.doc)}${values} |`;
  };
  return kSections
    .map(([title, table]) =>
      [`## ${title}`, '', '| key | default | meaning |', '|---|---|---|', ...Object.entries(table).map(row)].join('\n'),
    )
    .join('\n\n');
}
