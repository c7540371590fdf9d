/** Every key's raw value with where it came from, read through the key tables. */
import type { MmeError } from '../errors';
import { keySpec, type KeyName } from './keys';
import type { ValueOf } from './types';
import { invalidValue, readValue, type Setting } from './values';

export class Settings {
  constructor(private readonly values: ReadonlyMap<string, Setting>) {}

  /** The key's value as its kind reads it: the setting, else the default. */
  read<N extends KeyName>(name: N): ValueOf<N> {
    const spec = keySpec(name)!;
    // readValue returns the type of spec.kind; the cast only tells the compiler which kind N has.
    return readValue(spec, this.values.get(name) ?? { value: spec.default ?? '', from: null }) as ValueOf<N>;
  }

  /** Set by a file, the command line or the environment (not left at its default). */
  has(name: KeyName): boolean {
    return this.values.has(name);
  }

  raw(name: KeyName): string | undefined {
    return this.values.get(name)?.value;
  }

  /** Where a key's value came from, finishing "set ...": "in /etc/x.properties"; null for a default. */
  from(name: KeyName): string | null {
    return this.values.get(name)?.from ?? null;
  }

  fromText(name: KeyName): string {
    const from = this.from(name);
    return from ? ` (set ${from})` : '';
  }

  invalid(name: KeyName, raw: string, problem: string, expected: string, example: string): MmeError {
    return invalidValue(`config key ${name}`, raw, problem, expected, example, this.from(name));
  }
}
