/**
 * The opset versions this onnxruntime build accepts, asked of it: a tiny Identity model importing a
 * domain at version v loads exactly when v is supported. Only load failures ask.
 */
import * as ort from 'onnxruntime-node';
import { identityModel } from './graph-rewrite';
import { kOneThread } from './warmup';

/** The domains onnxruntime's CPU build implements with versioned opsets ('' is ai.onnx). */
export const kKnownDomains = ['', 'ai.onnx.ml'] as const;

/** Above any opset ONNX has released. */
const kCeiling = 64;
const kDefaultDomainVersion = 13;
const cache = new Map<string, Promise<number>>();

export function domainName(domain: string): string {
  return domain === '' ? 'ai.onnx' : domain;
}

/** The highest version of `domain` (one of kKnownDomains) this build loads; the lowest is 1. */
export function maxSupportedOpset(domain: string): Promise<number> {
  if (!cache.has(domain)) cache.set(domain, highestLoading(domain));
  return cache.get(domain)!;
}

async function highestLoading(domain: string): Promise<number> {
  let lo = 1; // loads
  let hi = kCeiling + 1; // treated as failing
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (await loads(domain, mid)) lo = mid;
    else hi = mid;
  }
  return lo;
}

async function loads(domain: string, version: number): Promise<boolean> {
  const opsets: Array<[string, number]> = domain === '' ? [] : [['', kDefaultDomainVersion]];
  try {
    // Severity 3 (errors only): old opsets load with a warning each, which is no news to the server log.
    const model = identityModel([...opsets, [domain, version]]);
    const session = await ort.InferenceSession.create(model, { ...kOneThread, logSeverityLevel: 3 });
    await session.release();
    return true;
  } catch {
    return false;
  }
}
