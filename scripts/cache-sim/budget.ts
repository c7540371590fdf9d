/** What every simulator run shares: the seed and the cache's budget. */
import type { Capacity } from './simulate';

const GiB = 1024 ** 3;
export const SEED = 1;
/** About a fifth of the 300 models' 10 GiB: a cache that must choose. */
export const CAPACITY: Capacity = { bytes: 2 * GiB };
