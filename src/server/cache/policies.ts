/** The eviction policies by their eviction_policy name: the one place that knows every implementation. */
import type { EvictionPolicy } from './eviction-policy';
import { GdsfPolicy } from './gdsf';
import { LruPolicy } from './lru';

export type PolicyName = 'lru' | 'gdsf';

export function createPolicy(name: PolicyName): EvictionPolicy {
  return name === 'lru' ? new LruPolicy() : new GdsfPolicy();
}
