import { Settings } from '../../src/config/settings';

/** Settings as if `values` were written in c.properties. */
export function settingsOf(values: Record<string, string>): Settings {
  return new Settings(new Map(Object.entries(values).map(([k, value]) => [k, { value, from: 'in c.properties' }])));
}
