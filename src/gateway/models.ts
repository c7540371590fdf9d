/**
 * The server core as the doors see it, through the gateway: the model manager that the management
 * and metadata routes drive, and the names of its requests and models. The doors import nothing of
 * src/server themselves (.dependency-cruiser.cjs), so what they may reach of it is listed here.
 */
export type { ModelManager } from '../server/models/model-manager';
export type { Model } from '../server/models/model';
export { checkLoadRequestFields, type LoadRequest } from '../server/models/model-settings';
export { modelNotFound } from '../server/models/model-names';
