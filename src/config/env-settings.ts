/** MMS_<KEY> environment variables, which override the file and the command line when the file says enable_envvars_config=true. */
import type { Env } from './file-settings';
import { envOverrideName, KEYS, keySpec } from './keys';
import { readValue, type Setting } from './values';

export function applyEnvOverrides(settings: Map<string, Setting>, env: Env): void {
  const enable = settings.get('enable_envvars_config');
  if (!enable || readValue(keySpec('enable_envvars_config')!, enable) !== true) return;
  for (const { name } of KEYS) {
    const envName = envOverrideName(name);
    const value = env[envName];
    // enable_envvars_config itself is not overridable: MMS reads it from the file only.
    if (value !== undefined && name !== 'enable_envvars_config')
      settings.set(name, { value, from: `by environment variable ${envName}` });
  }
}
