import type { AutoscaleConfig } from '../../src/config/types';

/** The autoscale_* settings the policy tests run with: short idle and cooldown periods, the other keys at their defaults. */
export const kAutoscaleSettings: AutoscaleConfig = {
  queueWaitMs: 100,
  backlogPerWorker: 4,
  busyShare: 0.8,
  idleMs: 5000,
  cooldownMs: 3000,
  cpuWorkers: 0,
};
