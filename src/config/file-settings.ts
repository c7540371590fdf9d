/** The config file's settings: parsed as java.util.Properties, $$VAR$$ replaced from the environment. */
import { configError, type MmeError } from '../errors';
import { keySpec, nearestKey } from './keys';
import { parseProperties } from './properties';
import type { Setting } from './values';

export type Env = Readonly<Record<string, string | undefined>>;

/** MMS's pattern (ConfigManager.resolveEnvVarVals): names of at least two characters. */
const kEnvPlaceholder = /\$\$([^$]+[^$])\$\$/g;

export function fileSettings(
  text: string | null,
  configFile: string | null,
  env: Env,
): { settings: Map<string, Setting>; unknownKeys: string[] } {
  const fileName = configFile ?? 'the config file';
  const file = text === null ? new Map<string, string>() : parseProperties(text, fileName);
  const settings = new Map<string, Setting>();
  for (const [key, value] of file) settings.set(key, { value: substituteEnv(key, value, env), from: `in ${fileName}` });
  return { settings, unknownKeys: [...file.keys()].filter((key) => keySpec(key) === undefined) };
}

/** A typo'd key would otherwise leave its setting at the default without a word (max_loaded_model=2: no limit). */
export function unknownKeysError(unknownKeys: readonly string[], configFile: string | null): MmeError {
  const described = unknownKeys.map((key) => {
    const meant = nearestKey(key);
    return `${key.slice(0, 100)}${meant === null ? '' : ` (did you mean ${meant}?)`}`;
  });
  return configError(
    `unknown config key${unknownKeys.length > 1 ? 's' : ''} in ${configFile ?? 'the config file'}: ${described.join(', ')}; fix the name, or set allow_unknown_keys=true to keep keys meant for other servers (they are then logged and ignored)`,
  );
}

/** Replaces every $$VAR$$ with the variable's value (literally: no `$` tricks as in Java's appendReplacement). */
function substituteEnv(key: string, value: string, env: Env): string {
  return value.replace(kEnvPlaceholder, (_match, name: string) => {
    const replacement = env[name];
    if (replacement === undefined) {
      throw configError(`config key ${key} uses $$${name}$$ but environment variable ${name} is not set`);
    }
    return replacement;
  });
}
