/** What the doors may reach of src/server, which they never import themselves (.dependency-cruiser.cjs). */
export type { ModelManager } from '../server/models/model-manager';
export type { ModelRegistry } from '../server/models/registry';
export type { Model } from '../server/models/model';
export type { LoadRequest } from '../server/models/model-settings';
export { modelNotFound } from '../server/models/model-names';
