/** Turns one key's text into its typed value, or an MME_ERR_CONFIG that names key, value and expectation. */
import { configError, type MmeError } from '../errors';
import { kAddressForms, parseAddress } from './address';
import type { KeyKind, NamedKeySpec } from './keys';
import { parseLoadModels } from './load-models';
import type { KindType } from './types';

export interface Setting {
  readonly value: string;
  /** Where the value came from, finishing "set ...": "in /etc/x.properties", "by --models"; null for defaults. */
  readonly from: string | null;
}

const kInteger = /^[+-]?\d+$/;
const kDecimal = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

/** `subject` is "config key x" or "environment variable X". */
export function invalidValue(
  subject: string,
  raw: string,
  problem: string,
  expected: string,
  example: string,
  from: string | null = null,
): MmeError {
  const source = from === null ? '' : `; set ${from}`;
  return configError(`${subject}: "${raw}" ${problem} (expected ${expected}, e.g. ${example})${source}`);
}

export function readValue(
  spec: NamedKeySpec,
  setting: Setting,
  subject = `config key ${spec.name}`,
): KindType[KeyKind] | null {
  // Java keeps trailing whitespace in values; invisible in an editor, it is never meant.
  const text = setting.value.trim();
  const fail = (problem: string, expected: string): MmeError =>
    invalidValue(
      subject,
      setting.value,
      problem,
      expected,
      `${spec.name}=${spec.example ?? spec.default}`,
      setting.from,
    );

  // Empty is unset: null where a key may be unset, else (for names and enums) the default.
  if (text === '' && (spec.default === null || spec.kind === 'string' || spec.kind === 'enum')) {
    if (spec.kind === 'list') return [];
    return spec.default === null ? null : readValue(spec, { value: spec.default, from: null });
  }
  switch (spec.kind) {
    case 'string':
      return text;
    case 'enum': {
      const value = text.toLowerCase();
      if (!spec.values?.includes(value)) throw fail('is not one of the allowed values', spec.values!.join(', '));
      return value;
    }
    case 'url':
      if (!isHttpUrl(text)) throw fail('is not an http(s) URL', 'an http:// or https:// URL');
      return text;
    case 'int':
    case 'number': {
      const expected = `${spec.kind === 'int' ? 'a whole number' : 'a number'} ${spec.range?.text ?? ''}`.trim();
      if (!(spec.kind === 'int' ? kInteger : kDecimal).test(text)) {
        throw fail(spec.kind === 'int' ? 'is not an integer' : 'is not a number', expected);
      }
      const n = Number(text);
      if (!Number.isSafeInteger(n) && spec.kind === 'int') throw fail('is too large', expected);
      if (spec.range && !spec.range.allows(n)) throw fail('is out of range', expected);
      return n;
    }
    case 'bool': {
      const lower = text.toLowerCase();
      if (lower !== 'true' && lower !== 'false') throw fail('is not a boolean', 'true or false');
      return lower === 'true';
    }
    case 'address': {
      const address = parseAddress(text);
      if ('problem' in address) throw fail(`is not a valid address: ${address.problem}`, kAddressForms);
      return address;
    }
    case 'list': {
      const models = parseLoadModels(text);
      if (models !== 'ALL' && 'problem' in models)
        throw fail(`is not a valid model list: ${models.problem}`, 'ALL or a comma list of [name=]url');
      return models;
    }
    case 'regex':
      return wholeNameRegex(text, fail);
  }
}

/** Java's Matcher.matches() semantics (MMS uses it for blacklist_env_vars), so callers can use test(). */
function wholeNameRegex(source: string, fail: (problem: string, expected: string) => MmeError): RegExp {
  try {
    new RegExp(source);
  } catch (err) {
    throw fail(
      `is not a valid regular expression: ${(err as Error).message}`,
      'a regular expression matching whole variable names',
    );
  }
  return new RegExp(`^(?:${source})$`);
}

function isHttpUrl(text: string): boolean {
  try {
    return /^https?:$/.test(new URL(text).protocol);
  } catch {
    return false;
  }
}
