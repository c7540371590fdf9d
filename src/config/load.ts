/**
 * Config loading's I/O: finds and reads the file, then hands everything to the pure resolveConfig.
 * Lookup as MMS: env MMS_CONFIG_FILE, else --mms-config / -f, else ./config.properties, else defaults.
 * Unlike MMS, a missing file someone named is an error: in MMS a typo there quietly started the server
 * on defaults (127.0.0.1, no store), seen much later as unreachable pings or failing loads.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MmeError } from '../errors';
import { cgroupCpuLimit, readOrNull } from '../util/cgroup';
import { parseArgs } from './cli';
import { directoryProblem } from './model-store';
import { resolveConfig, type Env } from './resolve';
import type { ServerConfig } from './types';

export function loadConfig(
  env: Env = process.env,
  argv: readonly string[] = process.argv.slice(2),
  cwd: string = process.cwd(),
): ServerConfig {
  const args = parseArgs(argv);
  const { file, namedBy } = chooseFile(env, args.mmsConfig, cwd);
  const fileText = readIfPresent(file, namedBy);
  return resolveConfig({
    fileText,
    configFile: fileText === null ? null : file,
    env,
    argv: args,
    cpuCount: usableCpus(),
    dirProblem: directoryProblem(cwd),
  });
}

/**
 * The CPUs this server may use: its affinity (availableParallelism), lowered by a cgroup quota
 * (`docker run --cpus`, a Kubernetes CPU limit), which Node 20's count does not see. MMS's JVM
 * counts the same way (Runtime.availableProcessors is container-aware), so one worker per CPU
 * means one per CPU the container gets.
 */
function usableCpus(): number {
  return Math.min(os.availableParallelism(), cgroupCpuLimit(readOrNull) ?? Number.POSITIVE_INFINITY);
}

/** `namedBy` is null for the implicit ./config.properties, which may be absent. */
function chooseFile(env: Env, flagValue: string | null, cwd: string): { file: string; namedBy: string | null } {
  const fromEnv = env.MMS_CONFIG_FILE;
  if (fromEnv !== undefined && fromEnv !== '')
    return { file: path.resolve(cwd, fromEnv), namedBy: 'environment variable MMS_CONFIG_FILE' };
  if (flagValue !== null) return { file: path.resolve(cwd, flagValue), namedBy: '--mms-config' };
  return { file: path.join(cwd, 'config.properties'), namedBy: null };
}

function readIfPresent(file: string, namedBy: string | null): string | null {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' && namedBy === null) return null;
    const reason = code === 'ENOENT' ? 'does not exist' : `cannot be read (${code ?? (err as Error).message})`;
    const source = namedBy === null ? '' : ` (named by ${namedBy})`;
    throw new MmeError('MME_ERR_CONFIG', `config file ${file}${source} ${reason}`, { cause: err });
  }
}
