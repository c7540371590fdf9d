/** The eviction policies by their eviction_policy name: the one place that knows every implementation. */
import { ClassedPolicy } from './eviction-classes';
import type { EvictionPolicy } from './eviction-policy';
import { GdsfPolicy } from './gdsf';
import { LruPolicy } from './lru';

export type PolicyName = 'lru' | 'gdsf';

/** The named policy ranking each eviction class, pinned models kept out of the order (eviction-classes.ts). */
export function createPolicy(name: PolicyName): ClassedPolicy {
  return new ClassedPolicy((): EvictionPolicy => (name === 'lru' ? new LruPolicy() : new GdsfPolicy()));
}
