/** Command line: what SageMaker passes (`serve`) plus the MMS flags that affect configuration. */
import { configError } from '../errors';
import type { Setting } from './values';

export interface CliArgs {
  readonly command: 'serve' | null;
  readonly mmsConfig: string | null;
  readonly modelStore: string | null;
  /** `--models` entries, already split at commas; null when the flag is absent. */
  readonly models: readonly string[] | null;
  readonly help: boolean;
  readonly version?: boolean;
}

export const USAGE = `Usage: mme-server [serve] [options]

SageMaker starts the container with "serve"; the word is accepted and otherwise ignored.

Options:
  --mms-config FILE, -f FILE  config.properties to read (env MMS_CONFIG_FILE wins over this;
                              default ./config.properties if it exists, else built-in defaults)
  --model-store DIR           overrides model_store
  --models [NAME=]URL ...     overrides load_models: ALL, or entries separated by commas or spaces
  --help, -h                  print this text and exit
  --version                   print the version and exit
`;

const kAccepted =
  'serve, --mms-config FILE (-f FILE), --model-store DIR, --models [NAME=]URL..., --help (-h), --version';

export function parseArgs(argv: readonly string[]): CliArgs {
  let command: CliArgs['command'] = null;
  let mmsConfig: string | null = null;
  let modelStore: string | null = null;
  let models: string[] | null = null;
  let help = false;
  let version = false;

  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === 'serve' || arg === '--help' || arg === '-h' || arg === '--version') {
      if (arg === 'serve') command = 'serve';
      else if (arg === '--version') version = true;
      else help = true;
      continue;
    }
    if (!arg.startsWith('-')) {
      throw configError(`unexpected argument "${arg}" (accepted: ${kAccepted})`);
    }
    const eq = arg.startsWith('--') ? arg.indexOf('=') : -1;
    const flag = eq < 0 ? arg : arg.slice(0, eq);
    const inline = eq < 0 ? null : arg.slice(eq + 1);
    const takeOne = (): string => {
      const value = inline ?? (isValue(argv[i + 1]) ? argv[++i] : '');
      if (value === '') throw configError(`${flag} needs a value (accepted: ${kAccepted})`);
      return value;
    };
    switch (flag) {
      case '--mms-config':
      case '-f':
        mmsConfig = takeOne();
        break;
      case '--model-store':
        modelStore = takeOne();
        break;
      case '--models': {
        // As MMS (argparse nargs='+'): every following word up to the next flag is a model.
        const words = inline === null ? [] : [inline];
        while (isValue(argv[i + 1])) words.push(argv[++i]);
        models = words
          .flatMap((w) => w.split(','))
          .map((m) => m.trim())
          .filter((m) => m !== '');
        if (models.length === 0)
          throw configError(`--models needs at least one [NAME=]URL or ALL (accepted: ${kAccepted})`);
        break;
      }
      default:
        throw configError(`unknown option "${arg}" (accepted: ${kAccepted})`);
    }
  }
  return { command, mmsConfig, modelStore, models, help, ...(version ? { version } : {}) };
}

/**
 * A word that can be a flag's value. `serve` never is: SageMaker appends it after the image's
 * ENTRYPOINT, so `... --models a=/m serve` must not load a model called "serve".
 */
function isValue(word: string | undefined): word is string {
  return word !== undefined && word !== 'serve' && !word.startsWith('-');
}

/** The flags that set config keys, as settings that override the file's. */
export function cliSettings(args: CliArgs): Array<[string, Setting]> {
  const settings: Array<[string, Setting]> = [];
  if (args.modelStore !== null) settings.push(['model_store', { value: args.modelStore, from: 'by --model-store' }]);
  if (args.models !== null) settings.push(['load_models', { value: args.models.join(','), from: 'by --models' }]);
  return settings;
}
