/**
 * The command-line plumbing of the repository's npm scripts: `--name value` flags checked against a
 * declared set, so a typo is a usage error rather than a silently ignored option.
 */

export class UsageError extends Error {}

/** string: `--x v`; list: `--x v` repeatable; boolean: `--x` alone. */
export type FlagKind = 'string' | 'list' | 'boolean';

export class Flags {
  private constructor(
    private readonly values: ReadonlyMap<string, string[]>,
    /** Arguments that are not flags, in order. */
    readonly positionals: readonly string[],
  ) {}

  static parse(argv: readonly string[], spec: Readonly<Record<string, FlagKind>>): Flags {
    const values = new Map<string, string[]>();
    const positionals: string[] = [];
    for (let i = 0; i < argv.length; i++) {
      const arg = argv[i];
      if (!arg.startsWith('--')) {
        positionals.push(arg);
        continue;
      }
      const [name, inline] = arg.slice(2).split(/=(.*)/s, 2) as [string, string | undefined];
      const kind = spec[name];
      if (kind === undefined) throw new UsageError(`unknown option --${name}`);
      if (kind === 'boolean') {
        if (inline !== undefined) throw new UsageError(`--${name} takes no value`);
        values.set(name, ['true']);
        continue;
      }
      const value = inline ?? argv[++i];
      if (value === undefined || (inline === undefined && value.startsWith('--')))
        throw new UsageError(`--${name} needs a value`);
      if (kind === 'string' && values.has(name)) throw new UsageError(`--${name} is given twice`);
      values.set(name, [...(values.get(name) ?? []), value]);
    }
    return new Flags(values, positionals);
  }

  has(name: string): boolean {
    return this.values.has(name);
  }

  string(name: string): string | undefined {
    return this.values.get(name)?.[0];
  }

  list(name: string): string[] {
    return this.values.get(name) ?? [];
  }

  required(name: string, what: string): string {
    const v = this.string(name);
    if (v === undefined || v === '') throw new UsageError(`--${name} is required: ${what}`);
    return v;
  }

  /** A whole number ≥ min, or `fallback` when the flag is absent. */
  int(name: string, fallback: number, min: number): number {
    return this.number(name, fallback, min, true);
  }

  /** A number ≥ min, or `fallback` when the flag is absent. */
  number(name: string, fallback: number, min: number, whole = false): number {
    const v = this.string(name);
    if (v === undefined) return fallback;
    const n = Number(v);
    if (v.trim() === '' || !Number.isFinite(n) || n < min || (whole && !Number.isInteger(n))) {
      throw new UsageError(`--${name} must be a ${whole ? 'whole ' : ''}number >= ${min}, got ${JSON.stringify(v)}`);
    }
    return n;
  }
}

/**
 * `--help` or `-h` among the arguments: prints `usage` on stdout and answers true, so the script
 * returns before it starts a server, writes a file or spends minutes measuring.
 */
export function printedHelp(usage: string, argv: readonly string[] = process.argv.slice(2)): boolean {
  if (!argv.includes('--help') && !argv.includes('-h')) return false;
  process.stdout.write(`${usage}\n`);
  return true;
}

/**
 * Runs a script's main: a UsageError prints the message and the usage and exits 2; any other error
 * prints its name and message (no stack: these are messages for the person at the terminal) and exits 1.
 */
export function runCli(usage: string, main: (argv: string[]) => Promise<void>): void {
  const argv = process.argv.slice(2);
  if (printedHelp(usage, argv)) return;
  main(argv).then(
    () => undefined,
    (err: unknown) => {
      if (err instanceof UsageError) {
        process.stderr.write(`error: ${err.message}\n\n${usage}\n`);
        process.exitCode = 2;
        return;
      }
      const e = err as Error;
      process.stderr.write(`error: ${e.name && e.name !== 'Error' ? `${e.name}: ` : ''}${e.message}\n`);
      process.exitCode = 1;
    },
  );
}
